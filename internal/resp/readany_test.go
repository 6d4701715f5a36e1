package resp_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// ReadAny: replies in redigo's types, for Do.

func TestReadAnyUsesRedigoTypes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"status is string", "+OK\r\n", "OK"},
		{"other status is string", "+PONG\r\n", "PONG"},
		{"bulk is []byte", "$3\r\nfoo\r\n", []byte("foo")},
		{"empty bulk is empty []byte", "$0\r\n\r\n", []byte{}},
		{"integer is int64", ":42\r\n", int64(42)},
		{"nil bulk is nil", "$-1\r\n", nil},
		{"nil array is nil", "*-1\r\n", nil},
		{"null is nil", "_\r\n", nil},
		{"empty array", "*0\r\n", []any{}},
		{"array", "*3\r\n$1\r\na\r\n:1\r\n+s\r\n", []any{[]byte("a"), int64(1), "s"}},
		{"nested error element", "*2\r\n-ERR inner\r\n$-1\r\n", []any{redis.Error("ERR inner"), nil}},
		{"nested arrays", "*2\r\n*1\r\n*0\r\n*1\r\n$1\r\nx\r\n", []any{[]any{[]any{}}, []any{[]byte("x")}}},
		{"map is flat []any", "%1\r\n+k\r\n:7\r\n", []any{"k", int64(7)}},
		{"boolean is int64", "#t\r\n", int64(1)},
		{"attribute dropped", "|1\r\n+a\r\n+b\r\n:5\r\n", int64(5)},
	}
	for _, size := range bufferSizes {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+sentinel, size)
				v, err := r.ReadAny()
				if err != nil {
					t.Fatalf("ReadAny() error: %v", err)
				}
				if !reflect.DeepEqual(v, tt.want) {
					t.Fatalf("ReadAny() = %#v, want %#v", v, tt.want)
				}
				expectSentinel(t, r)
			})
		}
	}
}

func TestReadAnyWorksWithRedigoHelpers(t *testing.T) {
	r := newReader("+OK\r\n$5\r\nhello\r\n:12\r\n*3\r\n$1\r\na\r\n$-1\r\n$1\r\nc\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n", 16)
	if s, err := redis.String(r.ReadAny()); err != nil || s != "OK" {
		t.Errorf("redis.String(status) = %q, %v", s, err)
	}
	if s, err := redis.String(r.ReadAny()); err != nil || s != "hello" {
		t.Errorf("redis.String(bulk) = %q, %v", s, err)
	}
	if n, err := redis.Int64(r.ReadAny()); err != nil || n != 12 {
		t.Errorf("redis.Int64 = %d, %v", n, err)
	}
	if ss, err := redis.ByteSlices(r.ReadAny()); err != nil || len(ss) != 3 || string(ss[0]) != "a" || ss[1] != nil || string(ss[2]) != "c" {
		t.Errorf("redis.ByteSlices = %q, %v", ss, err)
	}
	if m, err := redis.StringMap(r.ReadAny()); err != nil || m["k"] != "v" {
		t.Errorf("redis.StringMap = %v, %v", m, err)
	}
}

func TestReadAnyTopLevelErrorIsReturnedAsError(t *testing.T) {
	for _, in := range []string{"-ERR top\r\n", "!7\r\nERR top\r\n"} {
		r := newReader(in+sentinel, 16)
		v, err := r.ReadAny()
		if v != nil {
			t.Errorf("ReadAny(%q) value = %#v, want nil", in, v)
		}
		if re, ok := err.(redis.Error); !ok || string(re) != "ERR top" {
			t.Fatalf("ReadAny(%q) error = %T %v, want redis.Error(\"ERR top\")", in, err, err)
		}
		expectSentinel(t, r)
	}
}
