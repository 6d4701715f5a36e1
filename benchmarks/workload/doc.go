// Package workload says what the targets are measured doing: the
// operations a run offers a client, and the data they need.
//
// A [Workload] is named, seeded once before it runs ([Workload.Setup])
// and turns an opened [Client] into an operation per worker
// ([Workload.Op]). [DefaultWorkloads] are the fixed ones of the default
// plan, each after a source document (get, setget, mget, values, near,
// pipeline). A [Custom] is the user's own, in memtier_benchmark's terms:
// a [Mix] of get, set, del, mget and mset over a key space drawn by a
// [KeyDist], with values of a [ValueSpec]'s sizes; [ParseMix],
// [ParseKeyDist] and [ParseValue] read the redisx-bench flags, and
// [Custom.Workload] makes it the workload "custom". Every key starts with
// [KeyPrefix].
package workload
