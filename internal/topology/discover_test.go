package topology

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// node answers CLUSTER SHARDS and CLUSTER SLOTS as a server would: shards
// and slots are its replies, or errors when they are redis.Errors.
func node(shards, slots any) func(context.Context, ...any) (any, error) {
	return func(_ context.Context, args ...any) (any, error) {
		reply := slots
		if args[1] == "SHARDS" {
			reply = shards
		}
		if err, ok := reply.(error); ok {
			return nil, err
		}
		return reply, nil
	}
}

// TestDiscoverNamesEveryNodeItCan: one Discover for every caller — the
// router, the near-cache's invalidations, the harness — so each gets the
// same answer: TLS ports over TLS, CLUSTER SLOTS before Redis 7, and a
// node the reply names without a host (a cluster of one) named by the
// host of the node asked.
func TestDiscoverNamesEveryNodeItCan(t *testing.T) {
	lone := []any{[]any{b("slots"), []any{int64(0), int64(16383)}, b("nodes"), []any{[]any{
		b("id"), b("4d9b"), b("port"), int64(7000), b("ip"), b(""), b("endpoint"), b(""),
		b("role"), b("master"), b("health"), b("online"),
	}}}}
	loneSlots := []any{[]any{int64(0), int64(16383), []any{b(""), int64(7000), b("4d9b")}}}
	unknown := redis.Error("ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.")
	for _, tc := range []struct {
		name string
		do   func(context.Context, ...any) (any, error)
		tls  bool
		want []string // masters, then replicas of the first shard
	}{
		{"shards, plain", node(tlsShardsReply7015(), nil), false, []string{"127.0.0.1:45727", "127.0.0.1:37759", "127.0.0.1:40259", "127.0.0.1:35971"}},
		{"shards, TLS", node(tlsShardsReply7015(), nil), true, []string{"127.0.0.1:32791", "127.0.0.1:36439", "127.0.0.1:36059", "127.0.0.1:40271"}},
		{"shards, no host", node(lone, nil), false, []string{"10.0.0.9:7000"}},
		{"slots before Redis 7, no host", node(unknown, loneSlots), false, []string{"10.0.0.9:7000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shards, err := Discover(context.Background(), tc.do, "10.0.0.9:7000", tc.tls)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sh := range shards {
				got = append(got, sh.Master)
			}
			got = append(got, shards[0].Replicas...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Discover: %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := Discover(context.Background(), node(redis.Error("ERR This instance has cluster support disabled"), nil), "10.0.0.9:6379", false); !errors.Is(err, ErrNotCluster) {
		t.Errorf("Discover of a standalone server: %v, want ErrNotCluster", err)
	}
	refused := redis.Error("NOPERM this user has no permissions to run the 'cluster|shards' command")
	if _, err := Discover(context.Background(), node(refused, nil), "10.0.0.9:7000", false); !errors.Is(err, refused) {
		t.Errorf("Discover refused: %v, want the server's error", err)
	}
}
