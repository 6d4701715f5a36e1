package resp_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redisx-go/kit/internal/resp"
)

// loopReader serves the same bytes forever, so that a Reader over it can
// be read from in a loop without allocating a new stream per operation.
type loopReader struct {
	p   []byte
	off int
}

func (l *loopReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		c := copy(b[n:], l.p[l.off:])
		n += c
		l.off = (l.off + c) % len(l.p)
	}
	return n, nil
}

func loopingReader(reply string) *resp.Reader {
	return resp.NewReader(&loopReader{p: []byte(reply)}, 4096)
}

var value64 = strings.Repeat("v", 64)

func TestReadBulkAllocations(t *testing.T) {
	dst := make([][]byte, 3)
	tests := []struct {
		name  string
		reply string
		call  func(*resp.Reader) error
		max   float64
	}{
		{"ReadBulk 64-byte value", bulk(value64), func(r *resp.Reader) error {
			v, err := r.ReadBulk()
			if len(v) != 64 {
				t.Fatalf("ReadBulk() = %q, %v", v, err)
			}
			return err
		}, 1},
		{"ReadBulk nil", "$-1\r\n", func(r *resp.Reader) error { _, err := r.ReadBulk(); return err }, 0},
		{"ReadInt", ":1234567\r\n", func(r *resp.Reader) error {
			n, err := r.ReadInt()
			if n != 1234567 {
				t.Fatalf("ReadInt() = %d, %v", n, err)
			}
			return err
		}, 0},
		{"ReadOK status", "+OK\r\n", func(r *resp.Reader) error { return r.ReadOK() }, 0},
		{"ReadOK nil", "$-1\r\n", func(r *resp.Reader) error { return r.ReadOK() }, 0},
		{"ReadBulks two values and a hole", "*3\r\n" + bulk(value64) + "$-1\r\n" + bulk("x"), func(r *resp.Reader) error {
			return r.ReadBulks(dst)
		}, 2}, // one per value handed to the caller
		{"Skip bulk", bulk(value64), func(r *resp.Reader) error { return r.Skip() }, 0},
		{"Skip status", "+OK\r\n", func(r *resp.Reader) error { return r.Skip() }, 0},
		{"Skip error", "-ERR x\r\n", func(r *resp.Reader) error { return r.Skip() }, 0},
		{"Skip integer", ":1234567\r\n", func(r *resp.Reader) error { return r.Skip() }, 0},
		{"Skip nested array", "*3\r\n" + bulk(value64) + ":1000\r\n*2\r\n+a\r\n$-1\r\n", func(r *resp.Reader) error { return r.Skip() }, 0},
		{"Skip map", "%1\r\n+k\r\n" + bulk(value64), func(r *resp.Reader) error { return r.Skip() }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := loopingReader(tt.reply)
			got := testing.AllocsPerRun(1000, func() {
				if err := tt.call(r); err != nil {
					t.Fatal(err)
				}
			})
			if got > tt.max {
				t.Errorf("%s: %v allocations per op, want at most %v", tt.name, got, tt.max)
			}
		})
	}
}

func TestAppendCommandAllocations(t *testing.T) {
	buf := make([]byte, 0, 1024)
	key := "user:1234"
	val := []byte(value64)
	got := testing.AllocsPerRun(1000, func() {
		b := resp.AppendArray(buf[:0], 5)
		b = resp.AppendString(b, "SET")
		b = resp.AppendString(b, key)
		b = resp.AppendBytes(b, val)
		b = resp.AppendString(b, "PX")
		b = resp.AppendInt(b, 60000)
		buf = b
	})
	if got != 0 {
		t.Errorf("AppendArray+AppendString+AppendBytes+AppendInt into a preallocated buffer: %v allocations, want 0", got)
	}
	if !bytes.HasPrefix(buf, []byte("*5\r\n$3\r\nSET\r\n")) {
		t.Fatalf("unexpected encoding %q", buf)
	}

	// AppendArg of already-boxed arguments of every type it encodes.
	args := []any{"GET", []byte("k"), 7, int64(-7), 1 << 40, int8(-8), uint16(16), uint(1) << 63, uint64(1) << 63, 2.5, float32(0.1), true}
	got = testing.AllocsPerRun(1000, func() {
		b := resp.AppendArray(buf[:0], len(args))
		for _, a := range args {
			var err error
			if b, err = resp.AppendArg(b, a); err != nil {
				t.Fatal(err)
			}
		}
		buf = b
	})
	if got != 0 {
		t.Errorf("AppendArg of string, []byte, integers, floats and bool: %v allocations, want 0", got)
	}
}

func BenchmarkReadBulk(b *testing.B) {
	r := loopingReader(bulk(value64))
	b.ReportAllocs()
	b.SetBytes(int64(len(bulk(value64))))
	for b.Loop() {
		v, err := r.ReadBulk()
		if err != nil || len(v) != 64 {
			b.Fatal(v, err)
		}
	}
}

func BenchmarkReadInt(b *testing.B) {
	r := loopingReader(":1234567\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadInt(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSkipArray(b *testing.B) {
	r := loopingReader("*3\r\n" + bulk(value64) + ":1000\r\n*2\r\n+a\r\n$-1\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Skip(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadAnyArray(b *testing.B) {
	r := loopingReader("*3\r\n" + bulk(value64) + ":1000\r\n*2\r\n+a\r\n$-1\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadAny(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendCommand(b *testing.B) {
	buf := make([]byte, 0, 1024)
	key := "user:1234"
	val := []byte(value64)
	b.ReportAllocs()
	for b.Loop() {
		buf = resp.AppendArray(buf[:0], 5)
		buf = resp.AppendString(buf, "SET")
		buf = resp.AppendString(buf, key)
		buf = resp.AppendBytes(buf, val)
		buf = resp.AppendString(buf, "PX")
		buf = resp.AppendInt(buf, 60000)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkAppendArg(b *testing.B) {
	args := []struct {
		name string
		arg  any
	}{
		{"string", "user:1234"},
		{"bytes", []byte(value64)},
		{"int", 60000},
		{"uint64", uint64(1) << 63},
		{"float64", 1.5},
		{"bool", true},
	}
	for _, a := range args {
		b.Run("type="+a.name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = resp.AppendArg(buf[:0], a.arg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
