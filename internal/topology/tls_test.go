package topology

import (
	"reflect"
	"testing"
)

// tlsShardsReply7015 is a CLUSTER SHARDS reply captured from redis 7.0.15
// nodes started with port, tls-port and tls-cluster yes: every node lists
// both ports, whatever the connection the reply came over.
func tlsShardsReply7015() []any {
	node := func(id string, port, tlsPort int64, role string) []any {
		return []any{
			b("id"), b(id),
			b("port"), port,
			b("tls-port"), tlsPort,
			b("ip"), b("127.0.0.1"),
			b("endpoint"), b("127.0.0.1"),
			b("role"), b(role),
			b("replication-offset"), int64(14),
			b("health"), b("online"),
		}
	}
	return []any{
		[]any{b("slots"), []any{int64(10923), int64(16383)}, b("nodes"), []any{
			node("81d2", 40259, 36059, "master"),
			node("ce2a", 36487, 43015, "replica"),
		}},
		[]any{b("slots"), []any{int64(0), int64(5460)}, b("nodes"), []any{
			node("ed79", 45727, 32791, "master"),
			node("a842", 35971, 40271, "replica"),
		}},
		[]any{b("slots"), []any{int64(5461), int64(10922)}, b("nodes"), []any{
			node("546a", 37759, 36439, "master"),
			node("ca22", 33185, 43017, "replica"),
		}},
	}
}

func TestParseShardsTLSTakesTheTLSPorts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func(any) ([]Shard, error)
		want  []Shard
	}{
		{"ParseShards", ParseShards, []Shard{
			{Master: "127.0.0.1:45727", Replicas: []string{"127.0.0.1:35971"}, Ranges: [][2]int{{0, 5460}}},
			{Master: "127.0.0.1:37759", Replicas: []string{"127.0.0.1:33185"}, Ranges: [][2]int{{5461, 10922}}},
			{Master: "127.0.0.1:40259", Replicas: []string{"127.0.0.1:36487"}, Ranges: [][2]int{{10923, 16383}}},
		}},
		{"ParseShardsTLS", ParseShardsTLS, []Shard{
			{Master: "127.0.0.1:32791", Replicas: []string{"127.0.0.1:40271"}, Ranges: [][2]int{{0, 5460}}},
			{Master: "127.0.0.1:36439", Replicas: []string{"127.0.0.1:43017"}, Ranges: [][2]int{{5461, 10922}}},
			{Master: "127.0.0.1:36059", Replicas: []string{"127.0.0.1:43015"}, Ranges: [][2]int{{10923, 16383}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tlsShardsReply7015())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s =\n%+v\nwant\n%+v", tc.name, got, tc.want)
			}
		})
	}
}

// A node lists one port only when the other is off (port 0) or the
// cluster does not announce TLS ports (tls-cluster no): both parsers take
// the one there is.
func TestParseShardsOnePortListed(t *testing.T) {
	plainOnly := []any{[]any{b("slots"), []any{int64(0), int64(16383)}, b("nodes"), []any{
		[]any{b("port"), int64(7000), b("ip"), b("127.0.0.1"), b("role"), b("master"), b("health"), b("online")},
	}}}
	tlsOnly := []any{[]any{b("slots"), []any{int64(0), int64(16383)}, b("nodes"), []any{
		[]any{b("tls-port"), int64(7443), b("ip"), b("127.0.0.1"), b("role"), b("master"), b("health"), b("online")},
	}}}
	for _, tc := range []struct {
		name  string
		parse func(any) ([]Shard, error)
		reply []any
		want  string
	}{
		{"ParseShards/plain only", ParseShards, plainOnly, "127.0.0.1:7000"},
		{"ParseShardsTLS/plain only", ParseShardsTLS, plainOnly, "127.0.0.1:7000"},
		{"ParseShards/tls only", ParseShards, tlsOnly, "127.0.0.1:7443"},
		{"ParseShardsTLS/tls only", ParseShardsTLS, tlsOnly, "127.0.0.1:7443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tc.reply)
			if err != nil || len(got) != 1 || got[0].Master != tc.want {
				t.Errorf("master = %+v, %v; want %s", got, err, tc.want)
			}
		})
	}
}
