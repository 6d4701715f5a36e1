package topology

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// b is a bulk string as redigo returns it.
func b(s string) []byte { return []byte(s) }

// shardNodeReply is one node of a CLUSTER SHARDS reply as redis 7.0.15 sends
// it over RESP2 (a flat key/value array, keys in the server's order).
func shardNodeReply(id string, port int64, ip, endpoint, role string, offset int64, health string) []any {
	return []any{
		b("id"), b(id),
		b("port"), port,
		b("ip"), b(ip),
		b("endpoint"), b(endpoint),
		b("role"), b(role),
		b("replication-offset"), offset,
		b("health"), b(health),
	}
}

// shardsReply7015 is a CLUSTER SHARDS reply captured from redis 7.0.15 after
// the master on 17001 was killed and its replica 17004 promoted: the failed
// former master is listed as a shard of its own, with no slots.
func shardsReply7015() []any {
	return []any{
		[]any{b("slots"), []any{}, b("nodes"), []any{
			shardNodeReply("f2dd", 17001, "127.0.0.1", "127.0.0.1", "master", 98, "fail"),
		}},
		[]any{b("slots"), []any{int64(0), int64(5460)}, b("nodes"), []any{
			shardNodeReply("2688", 17004, "127.0.0.1", "127.0.0.1", "master", 98, "online"),
		}},
		[]any{b("slots"), []any{int64(5461), int64(10922)}, b("nodes"), []any{
			shardNodeReply("dd5e", 17002, "127.0.0.1", "127.0.0.1", "master", 252, "online"),
			shardNodeReply("1bd0", 17005, "127.0.0.1", "127.0.0.1", "replica", 238, "online"),
		}},
		[]any{b("slots"), []any{int64(10923), int64(16383)}, b("nodes"), []any{
			shardNodeReply("c025", 17003, "127.0.0.1", "127.0.0.1", "master", 238, "online"),
			shardNodeReply("2c25", 17006, "127.0.0.1", "127.0.0.1", "replica", 238, "online"),
		}},
	}
}

func TestParseShards(t *testing.T) {
	got, err := ParseShards(shardsReply7015())
	if err != nil {
		t.Fatal(err)
	}
	want := []Shard{
		{Master: "127.0.0.1:17004", Ranges: [][2]int{{0, 5460}}},
		{Master: "127.0.0.1:17002", Replicas: []string{"127.0.0.1:17005"}, Ranges: [][2]int{{5461, 10922}}},
		{Master: "127.0.0.1:17003", Replicas: []string{"127.0.0.1:17006"}, Ranges: [][2]int{{10923, 16383}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseShards =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseShardsVariants(t *testing.T) {
	tests := []struct {
		name  string
		reply any
		want  []Shard
	}{
		{
			name: "loading replica left out, several ranges sorted",
			reply: []any{[]any{
				b("slots"), []any{int64(100), int64(200), int64(0), int64(10)},
				b("nodes"), []any{
					shardNodeReply("a", 7000, "127.0.0.1", "127.0.0.1", "master", 0, "online"),
					shardNodeReply("b", 7001, "127.0.0.1", "127.0.0.1", "replica", 0, "loading"),
					shardNodeReply("c", 7002, "127.0.0.1", "127.0.0.1", "replica", 5, "fail"),
					shardNodeReply("d", 7003, "127.0.0.1", "127.0.0.1", "replica", 5, "online"),
				},
			}},
			want: []Shard{{Master: "127.0.0.1:7000", Replicas: []string{"127.0.0.1:7003"}, Ranges: [][2]int{{0, 10}, {100, 200}}}},
		},
		{
			name: "endpoint preferred; ? and empty endpoint fall back to ip; hostname endpoint",
			reply: []any{[]any{
				b("slots"), []any{int64(0), int64(1)},
				b("nodes"), []any{
					shardNodeReply("a", 7000, "10.0.0.1", "redis-0.example", "master", 1, "online"),
					shardNodeReply("b", 7001, "10.0.0.2", "?", "replica", 1, "online"),
					shardNodeReply("c", 7002, "10.0.0.3", "", "replica", 1, "online"),
				},
			}},
			want: []Shard{{Master: "redis-0.example:7000", Replicas: []string{"10.0.0.2:7001", "10.0.0.3:7002"}, Ranges: [][2]int{{0, 1}}}},
		},
		{
			name: "tls-port only, IPv6, nested slot pairs, string values",
			reply: []any{[]any{
				"slots", []any{[]any{int64(5), int64(6)}},
				"nodes", []any{[]any{
					"tls-port", int64(6380), "ip", "::1", "endpoint", "::1", "role", "master", "health", "online",
				}},
			}},
			want: []Shard{{Master: "[::1]:6380", Ranges: [][2]int{{5, 6}}}},
		},
		{
			name: "two masters in a shard: the online one",
			reply: []any{[]any{
				b("slots"), []any{int64(0), int64(16383)},
				b("nodes"), []any{
					shardNodeReply("old", 7000, "127.0.0.1", "127.0.0.1", "master", 1, "fail"),
					shardNodeReply("new", 7001, "127.0.0.1", "127.0.0.1", "master", 1, "online"),
				},
			}},
			want: []Shard{{Master: "127.0.0.1:7001", Ranges: [][2]int{{0, 16383}}}},
		},
		{
			name: "failing master kept when alone",
			reply: []any{[]any{
				b("slots"), []any{int64(0), int64(16383)},
				b("nodes"), []any{shardNodeReply("m", 7000, "127.0.0.1", "127.0.0.1", "master", 1, "fail")},
			}},
			want: []Shard{{Master: "127.0.0.1:7000", Ranges: [][2]int{{0, 16383}}}},
		},
		{
			name: "RESP3 maps",
			reply: []any{map[string]any{
				"slots": []any{int64(0), int64(16383)},
				"nodes": []any{map[any]any{"port": int64(7000), "ip": "127.0.0.1", "endpoint": "127.0.0.1", "role": "master", "health": "online"}},
			}},
			want: []Shard{{Master: "127.0.0.1:7000", Ranges: [][2]int{{0, 16383}}}},
		},
		{
			name:  "empty cluster",
			reply: []any{},
			want:  []Shard{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseShards(tt.reply)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseShards =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseShardsErrors(t *testing.T) {
	master := shardNodeReply("a", 7000, "127.0.0.1", "127.0.0.1", "master", 1, "online")
	tests := []struct {
		name  string
		reply any
		want  string
	}{
		{"not an array", b("x"), "want an array"},
		{"error reply", errors.New("ERR unknown subcommand"), "unknown subcommand"},
		{"shard not a map", []any{int64(1)}, "not a map"},
		{"odd map", []any{[]any{b("slots")}}, "odd length"},
		{"no slots", []any{[]any{b("nodes"), []any{master}}}, `no "slots"`},
		{"no nodes", []any{[]any{b("slots"), []any{}}}, `no "nodes"`},
		{"odd slots", []any{[]any{b("slots"), []any{int64(1)}, b("nodes"), []any{master}}}, "odd number"},
		{"slot out of range", []any{[]any{b("slots"), []any{int64(0), int64(16384)}, b("nodes"), []any{master}}}, "invalid slot range"},
		{"reversed range", []any{[]any{b("slots"), []any{int64(9), int64(1)}, b("nodes"), []any{master}}}, "invalid slot range"},
		{"slot not int", []any{[]any{b("slots"), []any{b("x"), int64(1)}, b("nodes"), []any{master}}}, "not integers"},
		{"no master", []any{[]any{b("slots"), []any{int64(0), int64(1)}, b("nodes"), []any{
			shardNodeReply("r", 7001, "127.0.0.1", "127.0.0.1", "replica", 1, "online"),
		}}}, "no node with role master"},
		{"no port", []any{[]any{b("slots"), []any{int64(0), int64(1)}, b("nodes"), []any{
			[]any{b("ip"), b("127.0.0.1"), b("role"), b("master")},
		}}}, `no "port"`},
		{"no role", []any{[]any{b("slots"), []any{int64(0), int64(1)}, b("nodes"), []any{
			[]any{b("ip"), b("127.0.0.1"), b("port"), int64(1)},
		}}}, `no "role"`},
		{"bad role", []any{[]any{b("slots"), []any{int64(0), int64(1)}, b("nodes"), []any{
			[]any{b("ip"), b("127.0.0.1"), b("port"), int64(1), b("role"), b("boss")},
		}}}, "unknown role"},
		{"bad field type", []any{[]any{b("slots"), []any{int64(0), int64(1)}, b("nodes"), []any{
			[]any{b("ip"), int64(1), b("port"), int64(1), b("role"), b("master")},
		}}}, `field "ip"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseShards(tt.reply)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseShards = %v, %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}

// slotsNodeReply is a node of a CLUSTER SLOTS entry as redis 7.0 sends it.
func slotsNodeReply(host any, port int64, id string) []any {
	return []any{host, port, b(id), []any{}}
}

func TestParseSlots(t *testing.T) {
	reply := []any{
		[]any{int64(5461), int64(10922), slotsNodeReply(b("127.0.0.1"), 7001, "b"), slotsNodeReply(b("127.0.0.1"), 7004, "e")},
		[]any{int64(0), int64(5460), slotsNodeReply(b("127.0.0.1"), 7000, "a"), slotsNodeReply(b("127.0.0.1"), 7003, "d")},
		[]any{int64(10923), int64(16000), slotsNodeReply(b("127.0.0.1"), 7002, "c")},
		[]any{int64(16001), int64(16383), []any{b("127.0.0.1"), int64(7002)}}, // an older server: no id
		[]any{int64(12), int64(12), slotsNodeReply(nil, 7005, "f")},           // unknown endpoint (NULL)
		[]any{int64(13), int64(13), slotsNodeReply(b("?"), 7006, "g")},
		[]any{int64(14), int64(14), slotsNodeReply(b("::1"), 7007, "h")},
	}
	got, err := ParseSlots(reply)
	if err != nil {
		t.Fatal(err)
	}
	want := []Shard{
		{Master: "127.0.0.1:7000", Replicas: []string{"127.0.0.1:7003"}, Ranges: [][2]int{{0, 5460}}},
		{Master: ":7005", Ranges: [][2]int{{12, 12}}},
		{Master: ":7006", Ranges: [][2]int{{13, 13}}},
		{Master: "[::1]:7007", Ranges: [][2]int{{14, 14}}},
		{Master: "127.0.0.1:7001", Replicas: []string{"127.0.0.1:7004"}, Ranges: [][2]int{{5461, 10922}}},
		{Master: "127.0.0.1:7002", Ranges: [][2]int{{10923, 16000}, {16001, 16383}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSlots =\n%+v\nwant\n%+v", got, want)
	}

	for _, bad := range []any{
		nil,
		[]any{int64(1)},
		[]any{[]any{int64(0), int64(1)}},
		[]any{[]any{int64(0), int64(16384), slotsNodeReply(b("h"), 1, "a")}},
		[]any{[]any{int64(0), int64(1), []any{b("h")}}},
		[]any{[]any{int64(0), int64(1), []any{b("h"), int64(0)}}},
		[]any{[]any{int64(0), int64(1), []any{int64(3), int64(1)}}},
	} {
		if got, err := ParseSlots(bad); err == nil {
			t.Errorf("ParseSlots(%v) = %v, want an error", bad, got)
		}
	}
}

func TestMap(t *testing.T) {
	shards := []Shard{
		{Master: "m2:1", Replicas: []string{"r2:1"}, Ranges: [][2]int{{100, 199}}},
		{Master: "m1:1", Ranges: [][2]int{{0, 99}, {200, 299}}},
		{Master: "m3:1", Ranges: [][2]int{{-5, -1}}}, // clipped away: serves nothing
	}
	m := NewMap(shards)
	shards[0].Replicas[0] = "changed" // the map keeps its own copy
	shards[0].Master = "changed"

	if got := m.Master(150); got != "m2:1" {
		t.Errorf("Master(150) = %q", got)
	}
	if got := m.Master(0); got != "m1:1" {
		t.Errorf("Master(0) = %q", got)
	}
	if got := m.Master(250); got != "m1:1" {
		t.Errorf("Master(250) = %q", got)
	}
	for _, slot := range []int{300, Slots - 1, -1, Slots} {
		if got := m.Master(slot); got != "" {
			t.Errorf("Master(%d) = %q, want empty", slot, got)
		}
		if sh, ok := m.Shard(slot); ok {
			t.Errorf("Shard(%d) = %+v, true", slot, sh)
		}
	}
	sh, ok := m.Shard(100)
	if !ok || sh.Master != "m2:1" || !slices.Equal(sh.Replicas, []string{"r2:1"}) {
		t.Errorf("Shard(100) = %+v, %v", sh, ok)
	}
	if got, want := m.Masters(), []string{"m1:1", "m2:1"}; !slices.Equal(got, want) {
		t.Errorf("Masters() = %v, want %v", got, want)
	}
	m.Masters()[0] = "changed"
	if m.Masters()[0] != "m1:1" {
		t.Error("Masters returned the map's own slice")
	}
	if m.Covered() {
		t.Error("Covered() = true with 300 slots assigned")
	}

	full := NewMap([]Shard{
		{Master: "a:1", Ranges: [][2]int{{0, 8191}}},
		{Master: "b:1", Ranges: [][2]int{{8192, 16383}}},
		{Master: "a:1", Ranges: [][2]int{{8000, 8999}}}, // overlap: the last wins
	})
	if !full.Covered() {
		t.Error("Covered() = false with every slot assigned")
	}
	if got := full.Master(8500); got != "a:1" {
		t.Errorf("Master(8500) = %q, want a:1 (the last shard listing it)", got)
	}
	if got := full.Masters(); !slices.Equal(got, []string{"a:1", "b:1"}) {
		t.Errorf("Masters() = %v", got)
	}

	var nilMap *Map
	if nilMap.Master(1) != "" || nilMap.Covered() || nilMap.Masters() != nil {
		t.Error("nil Map is not empty")
	}
	if _, ok := nilMap.Shard(1); ok {
		t.Error("nil Map has a shard")
	}
}

func TestMapAllocs(t *testing.T) {
	m := NewMap([]Shard{{Master: "a:1", Ranges: [][2]int{{0, 16383}}}})
	allocs := testing.AllocsPerRun(100, func() {
		_ = m.Master(Slot("some-key"))
		_, _ = m.Shard(42)
	})
	if allocs != 0 {
		t.Errorf("Map lookups allocate %v times per run, want 0", allocs)
	}
}

func TestParseRedirect(t *testing.T) {
	tests := []struct {
		msg  string
		want Redirect
		ok   bool
	}{
		{"MOVED 3999 127.0.0.1:6381", Redirect{Slot: 3999, Addr: "127.0.0.1:6381"}, true},
		{"ASK 3999 127.0.0.1:6381", Redirect{Ask: true, Slot: 3999, Addr: "127.0.0.1:6381"}, true},
		{"MOVED 3999 :6381", Redirect{Slot: 3999, Addr: ":6381"}, true},
		{"MOVED 0 redis-1.example:6379", Redirect{Slot: 0, Addr: "redis-1.example:6379"}, true},
		{"MOVED 16383 ::1:6379", Redirect{Slot: 16383, Addr: "[::1]:6379"}, true},
		{"ASK 1 [::1]:6379", Redirect{Ask: true, Slot: 1, Addr: "[::1]:6379"}, true},
		{"MOVED 12 127.0.0.1:6381\r\n", Redirect{Slot: 12, Addr: "127.0.0.1:6381"}, true},
		{"MOVED 16384 127.0.0.1:6381", Redirect{}, false},
		{"MOVED -1 127.0.0.1:6381", Redirect{}, false},
		{"MOVED x 127.0.0.1:6381", Redirect{}, false},
		{"MOVED 1 127.0.0.1", Redirect{}, false},
		{"MOVED 1 127.0.0.1:", Redirect{}, false},
		{"MOVED 1 127.0.0.1:99999", Redirect{}, false},
		{"MOVED 1", Redirect{}, false},
		{"MOVED 1 a:1 b:2", Redirect{}, false},
		{"moved 1 a:1", Redirect{}, false},
		{"ERR unknown command", Redirect{}, false},
		{"CROSSSLOT Keys in request don't hash to the same slot", Redirect{}, false},
		{"", Redirect{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseRedirect(tt.msg)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRedirect(%q) = %+v, %v; want %+v, %v", tt.msg, got, ok, tt.want, tt.ok)
		}
	}
}
