// Package target defines the client configurations a run measures: the
// redisx strategies, and the peers. It opens each as a workload.Client.
//
// A [Target] is a name and an Open function over an [Env] (the servers of
// a workload and the connection settings). [StrategyTarget] measures
// redisx over any strategy value, [URLTarget] over a redis:// URL (with a
// host, a server of its own: [Servers]), and [DefaultTargets] are those
// of the default plan. The peers — [RueidisTarget], [RedigoPoolTarget],
// [GoRedisTarget] and [GoRedisAutoPipelineTarget] — adapt rueidis,
// redigo's redis.Pool and go-redis to the same Client, with the del,
// mset and pipeline methods the custom and pipeline workloads call. Of
// the harness's packages, this one alone imports rueidis and go-redis.
package target
