package command_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/launcher"
)

func args(s ...any) []any { return s }

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want []string
		ok   bool
	}{
		{args("GET", "k"), []string{"k"}, true},
		{args("get", []byte("k")), []string{"k"}, true},
		{args("MSET", "a", "1", "b", "2"), []string{"a", "b"}, true},
		{args("DEL", "a", "b", "c"), []string{"a", "b", "c"}, true},
		{args("EVAL", "return 1", 2, "k1", "k2", "arg"), []string{"k1", "k2"}, true},
		{args("EVALSHA", "abc", "1", "k1", "arg"), []string{"k1"}, true},
		{args("EVAL", "return 1", 0), []string{}, true},
		{args("FCALL", "f", 1, "k"), []string{"k"}, true},
		{args("XREAD", "COUNT", 2, "STREAMS", "s1", "s2", "0", "0"), []string{"s1", "s2"}, true},
		{args("XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "s1", ">"), []string{"s1"}, true},
		{args("OBJECT", "ENCODING", "k"), []string{"k"}, true},
		{args("object", "freq", "k"), []string{"k"}, true},
		{args("ZUNIONSTORE", "dst", 2, "a", "b", "WEIGHTS", 1, 2), []string{"dst", "a", "b"}, true},
		{args("BLMPOP", 0, 2, "a", "b", "LEFT"), []string{"a", "b"}, true},
		{args("BLPOP", "a", "b", 0), []string{"a", "b"}, true},
		{args("GEORADIUS", "g", 0, 0, 1, "km", "STORE", "dst"), []string{"g", "dst"}, true},
		{args("MIGRATE", "h", 6379, "", 0, 100, "KEYS", "a", "b"), []string{"", "a", "b"}, false},
		{args("SORT", "k", "BY", "w_*", "STORE", "dst"), []string{"k"}, false}, // BY and STORE are not key specs
		{args("DBSIZE"), []string{}, true},
		{args("PING"), []string{}, true},
		{args("EVAL", "return 1", "x", "k"), []string{}, false}, // malformed key count
		{args("NOSUCHCOMMAND", "k"), nil, false},
	} {
		got, _, ok := command.Keys(tc.args)
		if !slices.Equal(got, tc.want) || ok != tc.ok {
			t.Errorf("Keys(%v) = %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSpecs(t *testing.T) {
	for _, tc := range []struct {
		args     []any
		writes   bool
		request  command.RequestPolicy
		response command.ResponsePolicy
	}{
		{args("GET", "k"), false, command.DefaultRequest, command.DefaultResponse},
		{args("SET", "k", "v"), true, command.DefaultRequest, command.DefaultResponse},
		{args("EVAL", "s", 0), true, command.DefaultRequest, command.DefaultResponse},
		{args("EVAL_RO", "s", 0), false, command.DefaultRequest, command.DefaultResponse},
		{args("DBSIZE"), false, command.AllShards, command.AggSum},
		{args("KEYS", "*"), false, command.AllShards, command.DefaultResponse},
		{args("FLUSHALL"), true, command.AllShards, command.AllSucceeded},
		{args("SCRIPT", "LOAD", "return 1"), false, command.AllNodes, command.AllSucceeded},
		{args("SCAN", 0), false, command.SpecialRequest, command.DefaultResponse},
	} {
		s := command.Lookup(tc.args)
		if s == nil {
			t.Fatalf("Lookup(%v) = nil", tc.args)
		}
		if s.Writes() != tc.writes || s.Request != tc.request || s.Response != tc.response {
			t.Errorf("Lookup(%v) = %s writes=%v request=%d response=%d; want writes=%v request=%d response=%d",
				tc.args, s.Name, s.Writes(), s.Request, s.Response, tc.writes, tc.request, tc.response)
		}
	}
	if command.Lookup(args("OBJECT")) == nil || command.Lookup(args("OBJECT", "NOSUCH")) == nil {
		t.Error("a container command without a known subcommand should still be found")
	}
	if command.Lookup(nil) != nil {
		t.Error("Lookup(nil) != nil")
	}
}

// TestKeysAgreeWithServer asks a real server (COMMAND GETKEYS) for the keys
// of a corpus of commands and compares with Keys.
func TestKeysAgreeWithServer(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	c, err := redis.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	corpus := [][]any{
		args("GET", "k"), args("SET", "k", "v", "EX", 10), args("MSET", "a", "1", "b", "2", "c", "3"),
		args("MGET", "a", "b"), args("DEL", "a"), args("EXISTS", "a", "b"), args("RENAME", "a", "b"),
		args("COPY", "a", "b", "REPLACE"), args("LMOVE", "a", "b", "LEFT", "RIGHT"),
		args("EVAL", "return 1", 2, "k1", "k2", "x"), args("EVALSHA", "0000000000000000000000000000000000000000", 1, "k"),
		args("EVAL_RO", "return 1", 1, "k"), args("FCALL", "f", 2, "a", "b"),
		args("XREAD", "COUNT", 1, "BLOCK", 10, "STREAMS", "s1", "s2", "s3", "0", "0", "0"),
		args("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), args("XADD", "s", "*", "f", "v"),
		args("OBJECT", "ENCODING", "k"), args("MEMORY", "USAGE", "k"), args("ZUNIONSTORE", "d", 3, "a", "b", "c"),
		args("ZINTER", 2, "a", "b"), args("SINTERCARD", 2, "a", "b", "LIMIT", 1), args("LMPOP", 2, "a", "b", "LEFT"),
		args("BLMPOP", 1, 2, "a", "b", "LEFT"), args("BZMPOP", 1, 1, "z", "MIN"), args("BLPOP", "a", "b", 1),
		args("GEORADIUS", "g", 0, 0, 1, "km", "STOREDIST", "d"), args("GEOSEARCHSTORE", "d", "s", "FROMLONLAT", 0, 0, "BYRADIUS", 1, "km"),
		args("SMOVE", "a", "b", "m"), args("PFMERGE", "d", "a", "b"), args("BITOP", "AND", "d", "a", "b"),
		args("LCS", "a", "b"), args("WATCH", "a", "b"), args("SUNIONSTORE", "d", "a", "b"),
		args("HSET", "h", "f", "v", "g", "w"), args("GETEX", "k", "PERSIST"), args("TOUCH", "a", "b"),
	}
	for _, cmd := range corpus {
		want, err := redis.Strings(c.Do("COMMAND", append([]any{"GETKEYS"}, cmd...)...))
		var re redis.Error
		if errors.As(err, &re) {
			want = []string{} // "the command has no key arguments"
		} else if err != nil {
			t.Fatalf("COMMAND GETKEYS %v: %v", cmd, err)
		}
		got, _, _ := command.Keys(cmd)
		if !slices.Equal(got, want) {
			t.Errorf("Keys(%v) = %q; server says %q", cmd, got, want)
		}
	}
}

// TestTableIsCurrent regenerates the table from the local redis-server and
// compares it with the committed one when the versions agree: a change of
// gen.go that was not regenerated fails here.
func TestTableIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerates the table")
	}
	srv := launcher.Standalone(t, launcher.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := srv.CLI(ctx, "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "redis_version:"+command.ServerVersion+"\r") && !strings.Contains(info, "redis_version:"+command.ServerVersion+"\n") {
		t.Skipf("table generated from redis-server %s, this server is another version", command.ServerVersion)
	}
	out := filepath.Join(t.TempDir(), "table.go")
	cmd := exec.Command("go", "run", "gen.go", "-addr", srv.Addr(), "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen.go: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("table.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("table.go is stale: run go generate ./internal/command/")
	}
}
