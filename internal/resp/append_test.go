package resp_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/resp"
)

// Encoding commands, and round trips through the reader.

func TestAppendArrayWritesHeader(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{0, "*0\r\n"},
		{1, "*1\r\n"},
		{3, "*3\r\n"},
		{1000, "*1000\r\n"},
	}
	for _, tt := range tests {
		if got := string(resp.AppendArray(nil, tt.n)); got != tt.want {
			t.Errorf("AppendArray(nil, %d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestAppendStringAndBytesAreBinarySafe(t *testing.T) {
	long := strings.Repeat("x\x00\r\n\xff", 300)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "$0\r\n\r\n"},
		{"ascii", "hello", "$5\r\nhello\r\n"},
		{"nul", "\x00", "$1\r\n\x00\r\n"},
		{"crlf", "\r\n", "$2\r\n\r\n\r\n"},
		{"lone cr and lf", "a\rb\nc", "$5\r\na\rb\nc\r\n"},
		{"0xff", "\xff\xfe", "$2\r\n\xff\xfe\r\n"},
		{"mixed binary", "k\x00\r\n\xff$*-+:", "$10\r\nk\x00\r\n\xff$*-+:\r\n"},
		{"utf8", "héllo", "$6\r\nhéllo\r\n"},
		{"long", long, "$1500\r\n" + long + "\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(resp.AppendString(nil, tt.in)); got != tt.want {
				t.Errorf("AppendString = %q, want %q", got, tt.want)
			}
			if got := string(resp.AppendBytes(nil, []byte(tt.in))); got != tt.want {
				t.Errorf("AppendBytes = %q, want %q", got, tt.want)
			}
			// Appending keeps what the buffer already holds.
			prefix := "*1\r\n"
			if got := string(resp.AppendBytes([]byte(prefix), []byte(tt.in))); got != prefix+tt.want {
				t.Errorf("AppendBytes after a prefix = %q, want %q", got, prefix+tt.want)
			}
		})
	}
}

func TestAppendBytesNilIsEmptyBulk(t *testing.T) {
	if got := string(resp.AppendBytes(nil, nil)); got != "$0\r\n\r\n" {
		t.Errorf("AppendBytes(nil, nil) = %q, want an empty bulk string", got)
	}
}

func TestAppendIntEncodesDecimalBulk(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "$1\r\n0\r\n"},
		{-1, "$2\r\n-1\r\n"},
		{42, "$2\r\n42\r\n"},
		{math.MaxInt64, "$19\r\n9223372036854775807\r\n"},
		{math.MinInt64, "$20\r\n-9223372036854775808\r\n"},
	}
	for _, tt := range tests {
		if got := string(resp.AppendInt(nil, tt.in)); got != tt.want {
			t.Errorf("AppendInt(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAppendArgEncodesSupportedTypes(t *testing.T) {
	tests := []struct {
		name string
		arg  any
		want string
	}{
		{"string", "key", bulk("key")},
		{"empty string", "", bulk("")},
		{"binary string", "\x00\r\n\xff", bulk("\x00\r\n\xff")},
		{"bytes", []byte("v\x00\r\n\xff"), bulk("v\x00\r\n\xff")},
		{"nil bytes", []byte(nil), bulk("")},
		{"int", int(-7), bulk("-7")},
		{"int64 max", int64(math.MaxInt64), bulk("9223372036854775807")},
		{"int64 min", int64(math.MinInt64), bulk("-9223372036854775808")},
		{"int32", int32(math.MinInt32), bulk("-2147483648")},
		{"int16", int16(-300), bulk("-300")},
		{"int8", int8(-128), bulk("-128")},
		{"uint", uint(12), bulk("12")},
		{"uint64 max", uint64(math.MaxUint64), bulk("18446744073709551615")},
		{"uint32 max", uint32(math.MaxUint32), bulk("4294967295")},
		{"uint16", uint16(65535), bulk("65535")},
		{"uint8", uint8(255), bulk("255")},
		{"float64", 1.5, bulk("1.5")},
		{"float64 shortest", 0.1, bulk("0.1")},
		{"float64 integral", float64(3), bulk("3")},
		{"float64 negative", -2.25, bulk("-2.25")},
		{"float32 shortest", float32(0.1), bulk("0.1")},
		{"bool true", true, bulk("1")},
		{"bool false", false, bulk("0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resp.AppendArg([]byte("PREFIX"), tt.arg)
			if err != nil {
				t.Fatalf("AppendArg(%T) error: %v", tt.arg, err)
			}
			if string(got) != "PREFIX"+tt.want {
				t.Errorf("AppendArg(%T %v) = %q, want %q", tt.arg, tt.arg, got, "PREFIX"+tt.want)
			}
			if err := resp.CheckArg(tt.arg); err != nil {
				t.Errorf("CheckArg(%T) = %v, want nil as AppendArg accepts it", tt.arg, err)
			}
		})
	}
}

func TestAppendArgRejectsUnsupportedTypesWithoutLeakingValue(t *testing.T) {
	const secret = "hunter2-s3cr3t"
	n := 424242
	tests := []struct {
		name     string
		arg      any
		wantType string
	}{
		{"struct", secretStruct{Password: secret}, "resp_test.secretStruct"},
		{"struct pointer", &secretStruct{Password: secret}, "*resp_test.secretStruct"},
		{"anonymous struct", struct{ Token string }{secret}, "struct { Token string }"},
		{"nil", nil, "nil"},
		{"typed nil pointer", (*int)(nil), "*int"},
		{"int pointer", &n, "*int"},
		{"named string", secretKey(secret), "resp_test.secretKey"},
		{"string slice", []string{secret}, "[]string"},
		{"map", map[string]string{"password": secret}, "map[string]string"},
		{"error", errors.New(secret), "*errors.errorString"},
		{"complex", complex(1, 2), "complex128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte("*2\r\n")
			got, err := resp.AppendArg(in, tt.arg)
			if err == nil {
				t.Fatalf("AppendArg(%T) = %q, nil; want an error", tt.arg, got)
			}
			var ae *resp.ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("AppendArg(%T) error %T %v; want *resp.ArgError", tt.arg, err, err)
			}
			if ae.Type != tt.wantType {
				t.Errorf("ArgError.Type = %q, want %q", ae.Type, tt.wantType)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantType) {
				t.Errorf("error %q does not name the type %q", msg, tt.wantType)
			}
			for _, leak := range []string{secret, "424242", "password"} {
				if strings.Contains(msg, leak) {
					t.Errorf("error %q leaks the argument's value %q", msg, leak)
				}
			}
			if string(got) != "*2\r\n" {
				t.Errorf("AppendArg changed the buffer on error: %q", got)
			}
			// CheckArg reports the same error without encoding.
			var ce *resp.ArgError
			if cerr := resp.CheckArg(tt.arg); !errors.As(cerr, &ce) || ce.Type != ae.Type || cerr.Error() != msg {
				t.Errorf("CheckArg(%T) = %v, want the error AppendArg returns: %v", tt.arg, cerr, err)
			}
		})
	}
}

func TestRoundTripCommandWithBinaryArgs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		args := make([][]byte, 1+rng.IntN(10))
		for i := range args {
			arg := make([]byte, rng.IntN(300))
			for j := range arg {
				// Bias towards the bytes that matter to the framing.
				switch rng.IntN(4) {
				case 0:
					arg[j] = "\r\n\x00\xff$*"[rng.IntN(6)]
				default:
					arg[j] = byte(rng.Uint32())
				}
			}
			if rng.IntN(8) == 0 {
				arg = nil
			}
			args[i] = arg
		}
		cmd := resp.AppendArray(nil, len(args))
		for _, a := range args {
			cmd = resp.AppendBytes(cmd, a)
		}
		size := bufferSizes[iter%len(bufferSizes)]
		r := resp.NewReader(bytes.NewReader(cmd), size)
		v, err := r.ReadAny()
		if err != nil {
			t.Fatalf("ReadAny(command %q) error: %v", cmd, err)
		}
		got, ok := v.([]any)
		if !ok || len(got) != len(args) {
			t.Fatalf("ReadAny(command) = %#v, want %d bulks", v, len(args))
		}
		for i, g := range got {
			b, ok := g.([]byte)
			if !ok || !bytes.Equal(b, args[i]) || b == nil {
				t.Fatalf("argument %d = %#v, want %q", i, g, args[i])
			}
		}
		expectEOF(t, r)

		// The same bytes read as an array of bulks.
		r = resp.NewReader(bytes.NewReader(cmd), size)
		dst := make([][]byte, len(args))
		if err := r.ReadBulks(dst); err != nil {
			t.Fatalf("ReadBulks(command) error: %v", err)
		}
		for i := range dst {
			if !bytes.Equal(dst[i], args[i]) {
				t.Fatalf("ReadBulks argument %d = %q, want %q", i, dst[i], args[i])
			}
		}
		expectEOF(t, r)
	}
}

func TestRoundTripAppendArgThroughReadAny(t *testing.T) {
	args := []any{"SET", []byte("k\x00\r\n\xff"), 42, int64(math.MinInt64), uint64(math.MaxUint64), 2.5, true}
	want := []string{"SET", "k\x00\r\n\xff", "42", "-9223372036854775808", "18446744073709551615", "2.5", "1"}
	cmd := resp.AppendArray(nil, len(args))
	for _, a := range args {
		var err error
		if cmd, err = resp.AppendArg(cmd, a); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := redis.Strings(resp.NewReader(bytes.NewReader(cmd), 16).ReadAny())
	if err != nil || !reflect.DeepEqual(ss, want) {
		t.Fatalf("round trip = %q, %v; want %q", ss, err, want)
	}
}
