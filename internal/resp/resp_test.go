package resp_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/resp"
)

// bufferSizes are the read buffer sizes every decoding test runs with: the
// smallest bufio allows, so that headers, bodies and lines straddle buffer
// refills, and a usual one.
var bufferSizes = []int{16, 4096}

// sentinel is a reply appended after the reply under test: reading it back
// proves the reply under test was consumed exactly.
const sentinel = "+SENTINEL\r\n"

func newReader(s string, size int) *resp.Reader {
	return resp.NewReader(strings.NewReader(s), size)
}

// expectSentinel asserts that the next reply is the sentinel and that the
// stream ends right after it.
func expectSentinel(t *testing.T, r *resp.Reader) {
	t.Helper()
	v, err := r.ReadAny()
	if err != nil || v != "SENTINEL" {
		t.Fatalf("reply after the one under test = %#v, %v; want \"SENTINEL\": stream out of sync", v, err)
	}
	expectEOF(t, r)
}

func expectEOF(t *testing.T, r *resp.Reader) {
	t.Helper()
	if r.Buffered() != 0 {
		t.Fatalf("Buffered() = %d at end of stream, want 0", r.Buffered())
	}
	if v, err := r.ReadAny(); err != io.EOF {
		t.Fatalf("ReadAny at end of stream = %#v, %v; want io.EOF", v, err)
	}
}

func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func isTypeError(err error) bool {
	var te *resp.TypeError
	return errors.As(err, &te)
}

// ---------------------------------------------------------------------------
// Encoding

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

type secretStruct struct{ Password string }

type secretKey string

// ---------------------------------------------------------------------------
// Decoding: typed readers

func TestReadBulkReturnsValue(t *testing.T) {
	long := strings.Repeat("0123456789", 50) // far longer than a 16-byte buffer
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"ascii", "$5\r\nhello\r\n", "hello"},
		{"binary", "$5\r\n\x00\r\n\xff\n\r\n", "\x00\r\n\xff\n"},
		{"looks like a reply", "$5\r\n+OK\r\n\r\n", "+OK\r\n"},
		{"longer than buffer", bulk(long), long},
		{"leading zeros in length", "$003\r\nabc\r\n", "abc"},
	}
	for _, size := range bufferSizes {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+sentinel, size)
				v, err := r.ReadBulk()
				if err != nil || string(v) != tt.want {
					t.Fatalf("ReadBulk() = %q, %v; want %q", v, err, tt.want)
				}
				expectSentinel(t, r)
			})
		}
	}
}

// TestReadBulkLargerThanAllocationChunk reads values around and above the
// size the reader allocates ahead of the data (1 MiB), which it grows as the
// bytes arrive.
func TestReadBulkLargerThanAllocationChunk(t *testing.T) {
	for _, n := range []int{1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 7} {
		val := make([]byte, n)
		for i := range val {
			val[i] = byte(i * 7)
		}
		in := "$" + strconv.Itoa(n) + "\r\n" + string(val) + "\r\n"
		for _, size := range bufferSizes {
			r := newReader(in+in+sentinel, size)
			v, err := r.ReadBulk()
			if err != nil || !bytes.Equal(v, val) {
				t.Fatalf("ReadBulk() of %d bytes: %d bytes, %v", n, len(v), err)
			}
			a, err := r.ReadAny()
			if err != nil || !bytes.Equal(a.([]byte), val) {
				t.Fatalf("ReadAny() of %d bytes: %v", n, err)
			}
			expectSentinel(t, r)
			// Truncated in the middle of the growth.
			cut := in[:len(in)-n/3]
			if _, err := newReader(cut, size).ReadBulk(); err != io.ErrUnexpectedEOF {
				t.Fatalf("ReadBulk() of a truncated %d-byte value = %v, want io.ErrUnexpectedEOF", n, err)
			}
		}
	}
}

func TestReadBulkNilVersusEmpty(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantNil bool
	}{
		{"empty value", "$0\r\n\r\n", false},
		{"RESP2 nil", "$-1\r\n", true},
		{"RESP3 null", "_\r\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReader(tt.in+sentinel, 16)
			v, err := r.ReadBulk()
			if err != nil {
				t.Fatalf("ReadBulk() error: %v", err)
			}
			if len(v) != 0 {
				t.Fatalf("ReadBulk() = %q, want no bytes", v)
			}
			if (v == nil) != tt.wantNil {
				t.Fatalf("ReadBulk() returned nil=%v, want nil=%v", v == nil, tt.wantNil)
			}
			expectSentinel(t, r)
		})
	}
}

func TestReadBulkErrorReplyIsRedisError(t *testing.T) {
	r := newReader("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"+sentinel, 16)
	v, err := r.ReadBulk()
	if v != nil {
		t.Errorf("ReadBulk() value = %q, want nil", v)
	}
	re, ok := err.(redis.Error)
	if !ok {
		t.Fatalf("ReadBulk() error = %T %v, want redis.Error", err, err)
	}
	if want := "WRONGTYPE Operation against a key holding the wrong kind of value"; string(re) != want {
		t.Errorf("redis.Error = %q, want %q", re, want)
	}
	if resp.Fatal(err) {
		t.Errorf("Fatal(%v) = true, want false: an error reply is data", err)
	}
	expectSentinel(t, r)
}

// wrongTypeReplies are complete replies of types other than bulk strings.
var wrongTypeReplies = []struct{ name, in string }{
	{"integer", ":12\r\n"},
	{"status", "+OK\r\n"},
	{"array of bulks", "*2\r\n$1\r\na\r\n$3\r\nb\r\n\r\n"},
	{"nested array", "*2\r\n*2\r\n:1\r\n$2\r\nxy\r\n*0\r\n"},
	{"array with error element", "*1\r\n-ERR x\r\n"},
	{"map", "%1\r\n+k\r\n$1\r\nv\r\n"},
	{"set", "~2\r\n:1\r\n:2\r\n"},
	{"push", ">2\r\n+message\r\n$2\r\nhi\r\n"},
	{"double", ",3.14\r\n"},
	{"boolean", "#t\r\n"},
	{"big number", "(12345678901234567890\r\n"},
	{"verbatim", "=8\r\ntxt:some\r\n"},
	{"blob error", "!5\r\nERR x\r\n"},
	{"nil array", "*-1\r\n"},
	{"big array of bulks", "*3\r\n" + bulk(strings.Repeat("a", 100)) + bulk(strings.Repeat("b", 100)) + bulk("")},
}

func TestReadBulkWrongTypeIsConsumed(t *testing.T) {
	for _, size := range bufferSizes {
		for _, tt := range wrongTypeReplies {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+bulk("next")+sentinel, size)
				v, err := r.ReadBulk()
				if v != nil || !isTypeError(err) {
					t.Fatalf("ReadBulk() = %q, %v; want nil, *resp.TypeError", v, err)
				}
				if resp.Fatal(err) {
					t.Errorf("Fatal(%v) = true, want false: the reply was consumed", err)
				}
				v, err = r.ReadBulk()
				if err != nil || string(v) != "next" {
					t.Fatalf("next ReadBulk() = %q, %v; want \"next\"", v, err)
				}
				expectSentinel(t, r)
			})
		}
	}
}

func TestReadIntValuesAndErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      int64
		wantRedis bool
		wantType  bool
	}{
		{"zero", ":0\r\n", 0, false, false},
		{"positive", ":1000\r\n", 1000, false, false},
		{"negative", ":-1\r\n", -1, false, false},
		{"plus sign", ":+5\r\n", 5, false, false},
		{"max", ":9223372036854775807\r\n", math.MaxInt64, false, false},
		{"min", ":-9223372036854775808\r\n", math.MinInt64, false, false},
		{"error reply", "-ERR value is not an integer or out of range\r\n", 0, true, false},
		{"bulk is a type error", "$2\r\n12\r\n", 0, false, true},
		{"status is a type error", "+OK\r\n", 0, false, true},
		{"nil is a type error", "$-1\r\n", 0, false, true},
		{"array is a type error", "*2\r\n:1\r\n:2\r\n", 0, false, true},
	}
	for _, size := range bufferSizes {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+sentinel, size)
				n, err := r.ReadInt()
				switch {
				case tt.wantRedis:
					if _, ok := err.(redis.Error); !ok {
						t.Fatalf("ReadInt() = %d, %v; want a redis.Error", n, err)
					}
				case tt.wantType:
					if !isTypeError(err) {
						t.Fatalf("ReadInt() = %d, %v; want a *resp.TypeError", n, err)
					}
				default:
					if err != nil || n != tt.want {
						t.Fatalf("ReadInt() = %d, %v; want %d", n, err, tt.want)
					}
				}
				expectSentinel(t, r)
			})
		}
	}
}

func TestReadOKAcceptsStatusAndNil(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantRedis bool
		wantType  bool
	}{
		{"OK", "+OK\r\n", false, false},
		{"other status", "+QUEUED\r\n", false, false},
		{"empty status", "+\r\n", false, false},
		{"nil bulk (SET NX not set)", "$-1\r\n", false, false},
		{"nil array", "*-1\r\n", false, false},
		{"RESP3 null", "_\r\n", false, false},
		{"error reply", "-ERR syntax error\r\n", true, false},
		{"integer", ":1\r\n", false, true},
		{"bulk OK", "$2\r\nOK\r\n", false, true},
		{"empty array", "*0\r\n", false, true},
		{"array", "*2\r\n$1\r\na\r\n+b\r\n", false, true},
	}
	for _, size := range bufferSizes {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+sentinel, size)
				err := r.ReadOK()
				switch {
				case tt.wantRedis:
					if _, ok := err.(redis.Error); !ok {
						t.Fatalf("ReadOK() = %v; want a redis.Error", err)
					}
				case tt.wantType:
					if !isTypeError(err) {
						t.Fatalf("ReadOK() = %v; want a *resp.TypeError", err)
					}
				default:
					if err != nil {
						t.Fatalf("ReadOK() = %v; want nil", err)
					}
				}
				expectSentinel(t, r)
			})
		}
	}
}

func TestReadBulksFillsHoles(t *testing.T) {
	in := "*4\r\n$1\r\na\r\n$-1\r\n$0\r\n\r\n_\r\n" + sentinel
	for _, size := range bufferSizes {
		r := newReader(in, size)
		dst := [][]byte{[]byte("stale"), []byte("stale"), nil, []byte("stale")}
		if err := r.ReadBulks(dst); err != nil {
			t.Fatalf("ReadBulks() error: %v", err)
		}
		if string(dst[0]) != "a" || dst[1] != nil || dst[2] == nil || len(dst[2]) != 0 || dst[3] != nil {
			t.Fatalf("ReadBulks() = %q; want [a <nil> \"\" <nil>]", dst)
		}
		expectSentinel(t, r)
	}
}

func TestReadBulksReplyErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		n         int
		want      []string // "<nil>" for a nil element; nil to skip the check
		wantRedis bool
		wantType  bool
	}{
		{"error reply", "-ERR wrong number of arguments\r\n", 2, nil, true, false},
		{"error element", "*3\r\n$1\r\na\r\n-ERR inner\r\n$1\r\nc\r\n", 3, []string{"a", "<nil>", "c"}, true, false},
		{"wrong top-level type", "$3\r\nabc\r\n", 1, nil, false, true},
		{"wrong element type", "*3\r\n:1\r\n$1\r\nb\r\n*1\r\n$1\r\nz\r\n", 3, nil, false, true},
		{"wrong first element then error element", "*3\r\n:1\r\n-ERR x\r\n$1\r\nc\r\n", 3, nil, false, true},
	}
	for _, size := range bufferSizes {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+sentinel, size)
				dst := make([][]byte, tt.n)
				err := r.ReadBulks(dst)
				if tt.wantRedis {
					if _, ok := err.(redis.Error); !ok {
						t.Fatalf("ReadBulks() = %v, want a redis.Error", err)
					}
				}
				if tt.wantType && !isTypeError(err) {
					t.Fatalf("ReadBulks() = %v, want a *resp.TypeError", err)
				}
				if resp.Fatal(err) {
					t.Fatalf("Fatal(%v) = true; the reply must be consumed", err)
				}
				if tt.want != nil {
					for i, w := range tt.want {
						got := string(dst[i])
						if dst[i] == nil {
							got = "<nil>"
						}
						if got != w {
							t.Errorf("dst[%d] = %q, want %q", i, got, w)
						}
					}
				}
				expectSentinel(t, r)
			})
		}
	}
}

func TestReadBulksLengthMismatchKeepsStreamInSync(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
	}{
		{"more elements than slots", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", 2},
		{"fewer elements than slots", "*1\r\n$1\r\na\r\n", 2},
		{"empty array", "*0\r\n", 1},
		{"nested elements", "*2\r\n*2\r\n$1\r\na\r\n:1\r\n%1\r\n+k\r\n+v\r\n", 1},
	}
	for _, size := range bufferSizes {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+sentinel, size)
				err := r.ReadBulks(make([][]byte, tt.n))
				if !errors.Is(err, resp.ErrProtocol) {
					t.Fatalf("ReadBulks() = %v, want an error wrapping ErrProtocol", err)
				}
				expectSentinel(t, r)
			})
		}
	}
}

// ---------------------------------------------------------------------------
// Decoding: Skip and ReadAny

// everyReply holds a valid reply of every type the reader knows.
var everyReply = []struct{ name, in string }{
	{"status", "+OK\r\n"},
	{"empty status", "+\r\n"},
	{"error", "-ERR boom\r\n"},
	{"integer", ":-42\r\n"},
	{"bulk", "$3\r\nfoo\r\n"},
	{"binary bulk", "$4\r\n\r\n\x00\xff\r\n"},
	{"empty bulk", "$0\r\n\r\n"},
	{"nil bulk", "$-1\r\n"},
	{"nil array", "*-1\r\n"},
	{"empty array", "*0\r\n"},
	{"array", "*3\r\n$1\r\na\r\n:2\r\n+c\r\n"},
	{"nested arrays", "*2\r\n*2\r\n*1\r\n$1\r\nx\r\n*0\r\n*2\r\n-ERR e\r\n$-1\r\n"},
	{"null", "_\r\n"},
	{"double", ",1.5e3\r\n"},
	{"boolean", "#f\r\n"},
	{"big number", "(-1\r\n"},
	{"verbatim", "=7\r\ntxt:abc\r\n"},
	{"blob error", "!4\r\nERR!\r\n"},
	{"map", "%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n:2\r\n"},
	{"set", "~1\r\n$1\r\nz\r\n"},
	{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
	{"attribute then reply", "|1\r\n+ttl\r\n:3600\r\n$3\r\nval\r\n"},
	{"array with attribute element", "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n"},
	{"big bulk", bulk(strings.Repeat("\x00\r\n\xff", 5000))},
	{"array of big bulks", "*2\r\n" + bulk(strings.Repeat("p", 3000)) + bulk(strings.Repeat("q", 7000))},
	{"long status", "+" + strings.Repeat("s", 300) + "\r\n"},
}

func TestSkipConsumesEveryReplyType(t *testing.T) {
	for _, size := range bufferSizes {
		for _, tt := range everyReply {
			t.Run(fmt.Sprintf("%s/buf%d", tt.name, size), func(t *testing.T) {
				r := newReader(tt.in+sentinel, size)
				if err := r.Skip(); err != nil {
					t.Fatalf("Skip() = %v", err)
				}
				expectSentinel(t, r)
			})
		}
	}
}

func TestSkipBulkLargerThanBuffer(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB against a 16-byte buffer
	r := newReader(bulk(big)+"*1\r\n"+bulk(big)+sentinel, 16)
	if err := r.Skip(); err != nil {
		t.Fatalf("Skip() of a top-level big bulk = %v", err)
	}
	if err := r.Skip(); err != nil {
		t.Fatalf("Skip() of an array holding a big bulk = %v", err)
	}
	expectSentinel(t, r)
}

func TestReadLinesLongerThanBuffer(t *testing.T) {
	longStatus := strings.Repeat("status-", 40)
	longErr := "ERR " + strings.Repeat("very long message ", 30)
	in := "+" + longStatus + "\r\n" + // ReadAny
		"-" + longErr + "\r\n" + // ReadAny
		"-" + longErr + "\r\n" + // ReadBulk
		"-" + longErr + "\r\n" + // ReadInt
		"+" + longStatus + "\r\n" + // ReadOK
		"+" + longStatus + "\r\n" + // Skip
		"*2\r\n+" + longStatus + "\r\n-" + longErr + "\r\n" + // ReadAny
		sentinel
	r := newReader(in, 16)
	if v, err := r.ReadAny(); err != nil || v != longStatus {
		t.Fatalf("ReadAny(long status) = %#v, %v", v, err)
	}
	if _, err := r.ReadAny(); err != redis.Error(longErr) {
		t.Fatalf("ReadAny(long error) error = %v", err)
	}
	if _, err := r.ReadBulk(); err != redis.Error(longErr) {
		t.Fatalf("ReadBulk(long error) error = %v", err)
	}
	if _, err := r.ReadInt(); err != redis.Error(longErr) {
		t.Fatalf("ReadInt(long error) error = %v", err)
	}
	if err := r.ReadOK(); err != nil {
		t.Fatalf("ReadOK(long status) = %v", err)
	}
	if err := r.Skip(); err != nil {
		t.Fatalf("Skip(long status) = %v", err)
	}
	v, err := r.ReadAny()
	if want := []any{longStatus, redis.Error(longErr)}; err != nil || !reflect.DeepEqual(v, want) {
		t.Fatalf("ReadAny(array of long lines) = %#v, %v", v, err)
	}
	expectSentinel(t, r)
}

func TestPipelinedRepliesStayInSync(t *testing.T) {
	in := "+OK\r\n" + // ReadOK
		"$-1\r\n" + // ReadOK (SET NX)
		"$5\r\nvalue\r\n" + // ReadBulk
		":3\r\n" + // ReadInt
		"*2\r\n$1\r\nx\r\n$-1\r\n" + // ReadBulks
		"-ERR nope\r\n" + // ReadBulk
		"*1\r\n:1\r\n" + // Skip
		"$2\r\nhi\r\n" // ReadAny
	for _, size := range bufferSizes {
		r := newReader(in+sentinel, size)
		if err := r.ReadOK(); err != nil {
			t.Fatal(err)
		}
		if err := r.ReadOK(); err != nil {
			t.Fatal(err)
		}
		if v, err := r.ReadBulk(); err != nil || string(v) != "value" {
			t.Fatalf("ReadBulk = %q, %v", v, err)
		}
		if n, err := r.ReadInt(); err != nil || n != 3 {
			t.Fatalf("ReadInt = %d, %v", n, err)
		}
		dst := make([][]byte, 2)
		if err := r.ReadBulks(dst); err != nil || string(dst[0]) != "x" || dst[1] != nil {
			t.Fatalf("ReadBulks = %q, %v", dst, err)
		}
		if _, err := r.ReadBulk(); err != redis.Error("ERR nope") {
			t.Fatalf("ReadBulk(error) = %v", err)
		}
		if err := r.Skip(); err != nil {
			t.Fatal(err)
		}
		if v, err := r.ReadAny(); err != nil || !bytes.Equal(v.([]byte), []byte("hi")) {
			t.Fatalf("ReadAny = %#v, %v", v, err)
		}
		expectSentinel(t, r)
	}
}

// ---------------------------------------------------------------------------
// Malformed and truncated input

// readerMethods calls each reading method once.
var readerMethods = []struct {
	name string
	call func(*resp.Reader) error
}{
	{"ReadAny", func(r *resp.Reader) error { _, err := r.ReadAny(); return err }},
	{"Skip", func(r *resp.Reader) error { return r.Skip() }},
	{"ReadBulk", func(r *resp.Reader) error { _, err := r.ReadBulk(); return err }},
	{"ReadInt", func(r *resp.Reader) error { _, err := r.ReadInt(); return err }},
	{"ReadOK", func(r *resp.Reader) error { return r.ReadOK() }},
	{"ReadBulks1", func(r *resp.Reader) error { return r.ReadBulks(make([][]byte, 1)) }},
	{"ReadBulks3", func(r *resp.Reader) error { return r.ReadBulks(make([][]byte, 3)) }},
}

// ---------------------------------------------------------------------------
// Round trip

func TestWaitDoesNotConsume(t *testing.T) {
	r := newReader("$3\r\nabc\r\n", 16)
	if err := r.Wait(); err != nil {
		t.Fatalf("Wait() = %v with a reply pending", err)
	}
	if v, err := r.ReadBulk(); err != nil || string(v) != "abc" {
		t.Fatalf("ReadBulk() after Wait = %q, %v", v, err)
	}
	if err := r.Wait(); err != io.EOF {
		t.Fatalf("Wait() at end of stream = %v, want io.EOF", err)
	}
}

func TestReaderWhole(t *testing.T) {
	for _, tc := range []struct {
		in    string
		whole bool
	}{
		{"", false},
		{"+OK", false},
		{"+OK\r\n", true},
		{":12\r\n", true},
		{"$5\r\nhel", false},
		{"$5\r\nhello\r", false},
		{"$5\r\nhello\r\n", true},
		{"$-1\r\n", true},
		{"*2\r\n$1\r\na\r\n", false},
		{"*2\r\n$1\r\na\r\n$-1\r\n", true},
		{"*2\r\n*1\r\n:1\r\n+x\r\n", true},
		{"%1\r\n+k\r\n", false},
		{"%1\r\n+k\r\n+v\r\n", true},
		{"*-1\r\n", true},
	} {
		r := resp.NewReader(strings.NewReader(tc.in), 64)
		if tc.in != "" {
			r.Wait() // fills the buffer: a strings.Reader gives all at once
		}
		if got := r.Whole(); got != tc.whole {
			t.Errorf("Whole() of %q = %v, want %v", tc.in, got, tc.whole)
		}
		if tc.whole {
			if err := r.Skip(); err != nil {
				t.Errorf("Skip after Whole of %q: %v", tc.in, err)
			}
		}
	}
}
