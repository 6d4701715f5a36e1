package resp_test

import (
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/redisx-go/kit/internal/resp"
)

// Input that is not valid RESP: protocol errors, nesting bounds,
// truncation, and lengths that claim more than the stream holds.

func TestMalformedInputIsProtocolError(t *testing.T) {
	tests := []struct{ name, in string }{
		{"LF without CR", "+OK\n"},
		{"LF without CR in error", "-ERR\n"},
		{"bare CRLF", "\r\n"},
		{"bare LF", "\n"},
		{"bad bulk terminator", "$3\r\nfooXY"},
		{"bulk body too long for length", "$2\r\nabc\r\n"},
		{"bad bulk terminator in array", "*1\r\n$1\r\nab\r\n"},
		{"letters in integer", ":12a\r\n"},
		{"empty integer", ":\r\n"},
		{"lone minus", ":-\r\n"},
		{"integer overflow", ":9223372036854775808\r\n"},
		{"negative integer overflow", ":-9223372036854775809\r\n"},
		{"integer too long", ":99999999999999999999\r\n"},
		{"space in integer", ": 1\r\n"},
		{"letters in length", "$abc\r\n"},
		{"empty length", "$\r\n"},
		{"length below -1", "$-2\r\n"},
		{"bulk over MaxBulk", "$" + strconv.Itoa(resp.MaxBulk+1) + "\r\n"},
		{"huge bulk length", "$9223372036854775807\r\n"},
		{"array length below -1", "*-5\r\n"},
		{"array length too long", "*99999999999999999999\r\n"},
		{"huge array length", "*9223372036854775807\r\n"},
		{"huge map length", "%9223372036854775807\r\n"},
		{"map length overflowing when doubled", "%4611686018427387904\r\n"},
		{"attribute length overflowing when doubled", "|4611686018427387904\r\n"},
		{"unknown type byte", "?foo\r\n"},
		{"unknown type byte in array", "*1\r\n@x\r\n"},
		{"bad boolean", "#x\r\n"},
		{"empty boolean", "#\r\n"},
		{"NUL type byte", "\x00\r\n"},
	}
	for _, tt := range tests {
		for _, m := range readerMethods {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				r := newReader(tt.in, 16)
				err := m.call(r)
				if !errors.Is(err, resp.ErrProtocol) {
					t.Fatalf("%s(%q) = %v, want an error wrapping ErrProtocol", m.name, tt.in, err)
				}
				if !resp.Fatal(err) {
					t.Errorf("Fatal(%v) = false, want true", err)
				}
			})
		}
	}
}

// deepNest returns depth nested one-element arrays around an integer.
func deepNest(open string, depth int) string {
	return strings.Repeat(open, depth) + ":1\r\n"
}

// attributeNest returns a reply nested depth times through attributes: the
// key of each attribute is itself an attributed reply.
func attributeNest(depth int) string {
	if depth == 0 {
		return "+k\r\n"
	}
	return "|1\r\n" + attributeNest(depth-1) + "+v\r\n" + "+r\r\n"
}

func TestNestingDepthIsBounded(t *testing.T) {
	tests := []struct{ name, in string }{
		{"arrays", deepNest("*1\r\n", 1000)},
		{"maps", deepNest("%1\r\n+k\r\n", 1000)},
		{"sets", deepNest("~1\r\n", 1000)},
		{"attributes", attributeNest(1000)},
		{"attributes inside arrays", deepNest("*1\r\n|1\r\n+k\r\n+v\r\n", 1000)},
	}
	for _, tt := range tests {
		for _, m := range readerMethods {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				err := m.call(newReader(tt.in, 4096))
				if !errors.Is(err, resp.ErrProtocol) {
					t.Fatalf("%s = %v, want an error wrapping ErrProtocol (nesting too deep)", m.name, err)
				}
			})
		}
	}
	// Moderate nesting is fine.
	for _, m := range readerMethods[:2] {
		if err := m.call(newReader(deepNest("*1\r\n", 32), 4096)); err != nil {
			t.Errorf("%s of 32 nested arrays = %v", m.name, err)
		}
		if err := m.call(newReader(attributeNest(16), 4096)); err != nil {
			t.Errorf("%s of 16 nested attributes = %v", m.name, err)
		}
	}
}

func TestTruncatedInputReportsEOF(t *testing.T) {
	full := []string{
		"+OK\r\n",
		"-ERR x\r\n",
		":123\r\n",
		"$5\r\nhello\r\n",
		"$-1\r\n",
		"*3\r\n$1\r\na\r\n:2\r\n*1\r\n+c\r\n",
		"%1\r\n+k\r\n$1\r\nv\r\n",
		"|1\r\n+k\r\n+v\r\n$3\r\nabc\r\n",
		"+" + strings.Repeat("L", 50) + "\r\n",
		bulk(strings.Repeat("B", 50)),
	}
	for _, reply := range full {
		for cut := 0; cut < len(reply); cut++ {
			in := reply[:cut]
			for _, m := range readerMethods {
				err := m.call(newReader(in, 16))
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("%s(%q) = %v, want io.EOF or io.ErrUnexpectedEOF", m.name, in, err)
				}
			}
		}
	}
	// An empty stream is a clean io.EOF.
	for _, m := range readerMethods {
		if err := m.call(newReader("", 16)); err != io.EOF {
			t.Errorf("%s(\"\") = %v, want io.EOF", m.name, err)
		}
	}
}

// TestHugeLengthClaimsDoNotAllocate feeds headers that claim enormous bodies
// with nothing behind them: the reader must fail on the missing data without
// first allocating what the header claims.
func TestHugeLengthClaimsDoNotAllocate(t *testing.T) {
	const limit = 8 << 20
	claims := []string{
		"$" + strconv.Itoa(resp.MaxBulk) + "\r\nabc",
		"*1\r\n$" + strconv.Itoa(resp.MaxBulk) + "\r\nabc",
		"=" + strconv.Itoa(resp.MaxBulk) + "\r\nabc",
		"!" + strconv.Itoa(resp.MaxBulk) + "\r\nabc",
		"*67108864\r\n:1\r\n",
		"%33554432\r\n:1\r\n",
		"~67108864\r\n",
	}
	for _, in := range claims {
		for _, m := range readerMethods {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := m.call(newReader(in, 4096))
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Errorf("%s(%q) = nil, want an error", m.name, in)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > limit {
				t.Errorf("%s(%q) allocated %d bytes for a truncated reply, want at most %d", m.name, in, got, limit)
			}
		}
	}
}
