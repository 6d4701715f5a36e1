package command

import (
	"testing"
	"time"
)

// TestBlockTime checks which argument of each blocking command is its
// block time, in which unit, and what a 0 or an invalid value means.
func TestBlockTime(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want time.Duration
	}{
		{[]any{"GET", "k"}, 0},
		{[]any{"BLPOP", "a", "b", 5}, 5 * time.Second},
		{[]any{"blpop", "a", "0.25"}, 250 * time.Millisecond},
		{[]any{"BRPOP", "a", []byte("1.5")}, 1500 * time.Millisecond},
		{[]any{"BLPOP", "a", 0}, BlockForever},
		{[]any{"BLPOP", "a", "0"}, BlockForever},
		{[]any{"BLPOP", "a", -1}, 0},
		{[]any{"BLPOP", "a", "soon"}, 0},
		{[]any{"BLPOP", "a", "NaN"}, 0},
		{[]any{"BLPOP", "a", "1e300"}, MaxBlock},
		{[]any{"BRPOPLPUSH", "a", "b", 2.5}, 2500 * time.Millisecond},
		{[]any{"BLMOVE", "a", "b", "LEFT", "RIGHT", uint8(3)}, 3 * time.Second},
		{[]any{"BZPOPMIN", "z", float32(0.5)}, 500 * time.Millisecond},
		{[]any{"BZPOPMAX", "z", int64(7)}, 7 * time.Second},
		{[]any{"BLPOP", "a", true}, time.Second}, // sent as 1
		{[]any{"BLPOP", "a", false}, BlockForever},
		{[]any{"BLPOP", "a", int8(2)}, 2 * time.Second},
		{[]any{"BLMPOP", 2, 1, "a", "LEFT"}, 2 * time.Second},
		{[]any{"BZMPOP", "0", 1, "z", "MIN"}, BlockForever},
		{[]any{"XREAD", "COUNT", 10, "BLOCK", 1500, "STREAMS", "s", "$"}, 1500 * time.Millisecond},
		{[]any{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, BlockForever},
		{[]any{"XREAD", "STREAMS", "BLOCK", "0"}, 0}, // a stream named BLOCK
		{[]any{"XREAD", "COUNT", "BLOCK", "STREAMS", "s", "0"}, 0},
		{[]any{"XREADGROUP", "GROUP", "BLOCK", "c", "BLOCK", 20, "NOACK", "STREAMS", "s", ">"}, 20 * time.Millisecond},
		{[]any{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, 0},
		{[]any{"WAIT", 1, 250}, 250 * time.Millisecond},
		{[]any{"WAIT", 1, 0}, BlockForever},
		{[]any{"WAITAOF", 1, 0, "300"}, 300 * time.Millisecond},
		{[]any{"WAITAOF", 1, 0}, 0},
	} {
		if got := BlockTime(tc.args); got != tc.want {
			t.Errorf("BlockTime(%q) = %v; want %v", tc.args, got, tc.want)
		}
	}
}

// TestClassifyXReadBlock checks that only a BLOCK option, not a stream
// named BLOCK, sends XREAD to a dedicated connection.
func TestClassifyXReadBlock(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want Class
	}{
		{[]any{"XREAD", "BLOCK", 0, "STREAMS", "s", "$"}, ClassBlocking},
		{[]any{"XREAD", "STREAMS", "BLOCK", "0"}, ClassShared},
		{[]any{"XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "BLOCK", 5, "STREAMS", "s", ">"}, ClassBlocking},
		{[]any{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "BLOCK", ">"}, ClassShared},
	} {
		if got := Classify(tc.args); got != tc.want {
			t.Errorf("Classify(%q) = %d; want %d", tc.args, got, tc.want)
		}
	}
}
