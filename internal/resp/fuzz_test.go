package resp_test

import (
	"bytes"
	"errors"
	"io"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/resp"
)

// stream is a Reader over a byte slice that knows how far it has decoded.
type stream struct {
	data []byte
	src  *bytes.Reader
	r    *resp.Reader
}

func newStream(data []byte, size int) *stream {
	src := bytes.NewReader(data)
	return &stream{data: data, src: src, r: resp.NewReader(src, size)}
}

// consumed is the number of bytes decoded so far: read from the source and
// no longer buffered.
func (s *stream) consumed() int { return len(s.data) - s.src.Len() - s.r.Buffered() }

// fuzzMethods are every reading method; ReadBulks with a few lengths.
var fuzzMethods = []struct {
	name string
	call func(*resp.Reader) error
}{
	{"ReadAny", func(r *resp.Reader) error { _, err := r.ReadAny(); return err }},
	{"Skip", func(r *resp.Reader) error { return r.Skip() }},
	{"ReadBulk", func(r *resp.Reader) error { _, err := r.ReadBulk(); return err }},
	{"ReadInt", func(r *resp.Reader) error { _, err := r.ReadInt(); return err }},
	{"ReadOK", func(r *resp.Reader) error { return r.ReadOK() }},
	{"ReadBulks0", func(r *resp.Reader) error { return r.ReadBulks(nil) }},
	{"ReadBulks1", func(r *resp.Reader) error { return r.ReadBulks(make([][]byte, 1)) }},
	{"ReadBulks2", func(r *resp.Reader) error { return r.ReadBulks(make([][]byte, 2)) }},
	{"ReadBulks5", func(r *resp.Reader) error { return r.ReadBulks(make([][]byte, 5)) }},
}

var heapAllocs = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

func allocatedBytes() uint64 {
	metrics.Read(heapAllocs)
	return heapAllocs[0].Value.Uint64()
}

// checkError fails unless err is one of the errors a Reader documents.
func checkError(t *testing.T, method string, data []byte, err error) {
	t.Helper()
	switch {
	case err == nil, isRedisError(err), isTypeError(err),
		errors.Is(err, resp.ErrProtocol), err == io.EOF, err == io.ErrUnexpectedEOF:
	default:
		t.Fatalf("%s(%q) returned an undocumented error %T: %v", method, data, err, err)
	}
}

// checkRedigoValue fails unless v uses only redigo's reply types.
func checkRedigoValue(t *testing.T, data []byte, v any, top bool) {
	t.Helper()
	switch v := v.(type) {
	case nil, string, []byte, int64:
	case redis.Error:
		if top {
			t.Fatalf("ReadAny(%q) returned a redis.Error as a value", data)
		}
	case []any:
		for _, e := range v {
			checkRedigoValue(t, data, e, false)
		}
	default:
		t.Fatalf("ReadAny(%q) returned a %T, not a redigo reply type", data, v)
	}
}

func FuzzReader(f *testing.F) {
	// Valid replies of every type; the multi-kilobyte ones are left out,
	// as they slow the fuzzer down (minimizing them especially) and a
	// 16-byte read buffer already makes short bodies span refills.
	for _, s := range everyReply {
		if len(s.in) <= 512 {
			f.Add([]byte(s.in))
		}
	}
	for _, s := range wrongTypeReplies {
		if len(s.in) <= 512 {
			f.Add([]byte(s.in))
		}
	}
	for _, s := range []string{
		// Pipelines of valid replies.
		"+OK\r\n$3\r\nfoo\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n-ERR x\r\n",
		"*2\r\n$1\r\na\r\n$1\r\nb\r\n*2\r\n$1\r\nc\r\n$-1\r\n",
		"$-1\r\n_\r\n*-1\r\n+OK\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
		"|1\r\n|1\r\n+a\r\n+b\r\n+c\r\n+d\r\n:1\r\n",
		// Malformed and truncated replies.
		"+OK\n", "-ERR\n", "\r\n", "\n", "", "+", "$", "*",
		"$3\r\nfooXY", "$2\r\nabc\r\n", ":12a\r\n", ":\r\n", ":-\r\n",
		":9223372036854775808\r\n", ":-9223372036854775808\r\n", ":99999999999999999999\r\n",
		"$abc\r\n", "$-2\r\n", "$536870913\r\n", "$536870912\r\nabc", "$9223372036854775807\r\n",
		"*-5\r\n", "*67108864\r\n:1\r\n", "*9223372036854775807\r\n",
		"%4611686018427387904\r\n", "|4611686018427387904\r\n", "%9223372036854775807\r\n",
		"?foo\r\n", "#x\r\n", "#\r\n", "\x00\r\n",
		"$5\r\nhel", "*3\r\n$1\r\na\r\n", "+" + strings.Repeat("x", 100),
		deepNest("*1\r\n", 70), attributeNest(70),
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		// Every method, reading replies until the first error, must not
		// panic, must return documented errors and must allocate in
		// proportion to the input, whatever lengths it claims.
		for _, m := range fuzzMethods {
			before := allocatedBytes()
			s := newStream(data, 16)
			for i := 0; i <= len(data); i++ {
				err := m.call(s.r)
				checkError(t, m.name, data, err)
				if resp.Fatal(err) {
					break
				}
			}
			if got, limit := allocatedBytes()-before, uint64(16<<20+64*len(data)); got > limit {
				t.Fatalf("%s(%q) allocated %d bytes for %d bytes of input", m.name, data, got, len(data))
			}
		}

		// Reply by reply, Skip and the typed readers must consume exactly
		// the bytes ReadAny consumes for every reply ReadAny accepts.
		ra := newStream(data, 16)
		skip := newStream(data, 16)
		for ra.consumed() < len(data) {
			start := ra.consumed()
			v, err := ra.r.ReadAny()
			accepted := err == nil || isRedisError(err)
			serr := skip.r.Skip()
			if accepted != (serr == nil) {
				t.Fatalf("at %d of %q: ReadAny = %v but Skip = %v", start, data, err, serr)
			}
			if !accepted {
				break
			}
			checkRedigoValue(t, data, v, true)
			end := ra.consumed()
			if skip.consumed() != end {
				t.Fatalf("at %d of %q: ReadAny consumed to %d, Skip to %d", start, data, end, skip.consumed())
			}
			reply := data[start:end]
			for _, m := range fuzzMethods[2:] {
				s := newStream(reply, 16)
				err := m.call(s.r)
				if resp.Fatal(err) && !(strings.HasPrefix(m.name, "ReadBulks") && errors.Is(err, resp.ErrProtocol)) {
					t.Fatalf("%s(%q) = %v for a reply ReadAny accepts", m.name, reply, err)
				}
				if s.consumed() != len(reply) {
					t.Fatalf("%s(%q) consumed %d bytes, ReadAny %d", m.name, reply, s.consumed(), len(reply))
				}
			}
			// The typed readers agree with ReadAny on values.
			if b, err := newStream(reply, 16).r.ReadBulk(); err == nil {
				if got, ok := v.([]byte); b == nil && v != nil || b != nil && (!ok || !bytes.Equal(got, b)) {
					t.Fatalf("ReadBulk(%q) = %q, ReadAny = %#v", reply, b, v)
				}
			}
			if n, err := newStream(reply, 16).r.ReadInt(); err == nil && v != n {
				t.Fatalf("ReadInt(%q) = %d, ReadAny = %#v", reply, n, v)
			}
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("SET"), []byte("key"), []byte("value"), uint8(2))
	f.Add([]byte("GET"), []byte("\x00\r\n\xff"), []byte(nil), uint8(1))
	f.Add([]byte(""), []byte("$3\r\nfoo\r\n"), []byte("*1\r\n"), uint8(255))
	f.Add([]byte("\r\n"), []byte("\n"), []byte("\r"), uint8(0))
	f.Add([]byte(strings.Repeat("x", 100)), []byte("-ERR"), []byte("+OK"), uint8(7))

	f.Fuzz(func(t *testing.T, a, b, c []byte, n uint8) {
		args := [][]byte{a, b, c}[:n%4]
		size := 16 + int(n>>2)

		cmd := resp.AppendArray(nil, len(args))
		for i, arg := range args {
			if i == 1 {
				// AppendString must encode exactly as AppendBytes.
				before := len(cmd)
				cmd = resp.AppendString(cmd, string(arg))
				if !bytes.Equal(cmd[before:], resp.AppendBytes(nil, arg)) {
					t.Fatalf("AppendString(%q) and AppendBytes differ", arg)
				}
				continue
			}
			cmd = resp.AppendBytes(cmd, arg)
		}

		s := newStream(cmd, size)
		v, err := s.r.ReadAny()
		if err != nil {
			t.Fatalf("ReadAny(%q) error: %v", cmd, err)
		}
		got, ok := v.([]any)
		if !ok || len(got) != len(args) {
			t.Fatalf("ReadAny(%q) = %#v, want %d bulks", cmd, v, len(args))
		}
		for i, g := range got {
			if p, ok := g.([]byte); !ok || p == nil || !bytes.Equal(p, args[i]) {
				t.Fatalf("argument %d decoded as %#v, want %q", i, g, args[i])
			}
		}
		if s.consumed() != len(cmd) {
			t.Fatalf("ReadAny consumed %d of %d bytes", s.consumed(), len(cmd))
		}
		if _, err := s.r.ReadAny(); err != io.EOF {
			t.Fatalf("after the command: %v, want io.EOF", err)
		}

		s = newStream(cmd, size)
		dst := make([][]byte, len(args))
		if err := s.r.ReadBulks(dst); err != nil {
			t.Fatalf("ReadBulks(%q) error: %v", cmd, err)
		}
		for i := range dst {
			if !bytes.Equal(dst[i], args[i]) {
				t.Fatalf("ReadBulks argument %d = %q, want %q", i, dst[i], args[i])
			}
		}
		if s.consumed() != len(cmd) {
			t.Fatalf("ReadBulks consumed %d of %d bytes", s.consumed(), len(cmd))
		}

		s = newStream(cmd, size)
		if err := s.r.Skip(); err != nil || s.consumed() != len(cmd) {
			t.Fatalf("Skip(%q) = %v after %d of %d bytes", cmd, err, s.consumed(), len(cmd))
		}
	})
}
