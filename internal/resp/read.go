package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/gomodule/redigo/redis"
)

// MaxBulk is the largest bulk string the reader accepts: Redis's own
// proto-max-bulk-len default (512 MB).
const MaxBulk = 512 << 20

// maxArray bounds array lengths so that a corrupt header cannot make the
// reader allocate without limit.
const maxArray = 1 << 26

// ErrProtocol is returned (wrapped) when the byte stream is not valid RESP.
// A connection that produced it is out of sync and must be discarded.
var ErrProtocol = errors.New("protocol error")

func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

// Reader decodes replies from a buffered stream. It is not safe for
// concurrent use: one goroutine reads a connection's replies.
type Reader struct {
	br *bufio.Reader
}

// NewReader returns a Reader over rd with a read buffer of size bytes.
func NewReader(rd io.Reader, size int) *Reader {
	return &Reader{br: bufio.NewReaderSize(rd, size)}
}

// Buffered reports the bytes read from the stream but not yet decoded.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// line returns the next line without its CRLF. The slice is only valid
// until the next read.
func (r *Reader) line() ([]byte, error) {
	p, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A line longer than the buffer: only long simple strings and
		// error messages get here. Copy it out.
		buf := append([]byte(nil), p...)
		for err == bufio.ErrBufferFull {
			p, err = r.br.ReadSlice('\n')
			buf = append(buf, p...)
		}
		p = buf
	}
	if err != nil {
		return nil, err
	}
	if len(p) < 3 || p[len(p)-2] != '\r' {
		return nil, protocolError("bad line terminator")
	}
	return p[:len(p)-2], nil
}

// parseInt parses a RESP integer without allocating.
func parseInt(p []byte) (int64, error) {
	if len(p) == 0 {
		return 0, protocolError("empty integer")
	}
	neg := false
	if p[0] == '-' || p[0] == '+' {
		neg = p[0] == '-'
		p = p[1:]
		if len(p) == 0 {
			return 0, protocolError("bad integer")
		}
	}
	if len(p) > 19 {
		return 0, protocolError("integer too long")
	}
	// 19 digits always fit in a uint64; the sign decides the limit, so
	// that -9223372036854775808 (a valid Redis integer) is accepted.
	var n uint64
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, protocolError("bad integer")
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, protocolError("integer overflow")
		}
		return int64(-n), nil
	}
	if n > 1<<63-1 {
		return 0, protocolError("integer overflow")
	}
	return int64(n), nil
}

// header reads a type byte and its line.
func (r *Reader) header() (byte, []byte, error) {
	p, err := r.line()
	if err != nil {
		return 0, nil, err
	}
	return p[0], p[1:], nil
}

// bulkChunk is the most bulkBody allocates ahead of the data it has read.
const bulkChunk = 1 << 20

// bulkBody reads n bytes of a bulk string and its CRLF into a new slice.
func (r *Reader) bulkBody(n int64) ([]byte, error) {
	if n > MaxBulk {
		return nil, protocolError("bulk length %d over limit", n)
	}
	// Values up to bulkChunk take exactly one allocation. Larger ones grow
	// as their bytes arrive, so that a corrupt or hostile length cannot
	// make the reader allocate memory the stream does not back.
	v := make([]byte, min(n, bulkChunk))
	if _, err := io.ReadFull(r.br, v); err != nil {
		return nil, err
	}
	for int64(len(v)) < n {
		m := len(v)
		k := int(min(n-int64(m), int64(m)))
		v = slices.Grow(v, k)[:m+k]
		if _, err := io.ReadFull(r.br, v[m:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	if err := r.crlf(); err != nil {
		return nil, err
	}
	return v, nil
}

func (r *Reader) crlf() error {
	c1, err := r.br.ReadByte()
	if err != nil {
		return err
	}
	c2, err := r.br.ReadByte()
	if err != nil {
		return err
	}
	if c1 != '\r' || c2 != '\n' {
		return protocolError("bad bulk terminator")
	}
	return nil
}

func (r *Reader) length(p []byte) (int64, error) {
	n, err := parseInt(p)
	if err != nil {
		return 0, err
	}
	if n < -1 {
		return 0, protocolError("bad length %d", n)
	}
	return n, nil
}

// arrayLength parses the length of an aggregate of type t and returns how
// many replies follow its header: twice the length for maps and
// attributes. It is -1 for a nil aggregate.
func (r *Reader) arrayLength(t byte, p []byte) (int64, error) {
	n, err := r.length(p)
	if err != nil || n < 0 {
		return n, err
	}
	limit := int64(maxArray)
	pairs := t == '%' || t == '|'
	if pairs {
		limit /= 2 // checked before doubling, which could overflow
	}
	if n > limit {
		return 0, protocolError("array length %d over limit", n)
	}
	if pairs {
		n *= 2
	}
	return n, nil
}

// ReadBulk reads a reply expected to be a bulk string or nil, as GET
// returns. A nil reply returns (nil, nil); an empty value returns a
// non-nil empty slice. An error reply returns a redis.Error; any other
// reply type is consumed and reported as an error, leaving the stream in
// sync.
func (r *Reader) ReadBulk() ([]byte, error) {
	t, p, err := r.header()
	if err != nil {
		return nil, err
	}
	switch t {
	case '$':
		n, err := r.length(p)
		if err != nil || n < 0 {
			return nil, err
		}
		return r.bulkBody(n)
	case '_':
		return nil, nil
	case '-':
		return nil, redis.Error(p)
	}
	return nil, r.unexpected(t, p, "bulk string")
}

// ReadInt reads an integer reply, as DEL returns.
func (r *Reader) ReadInt() (int64, error) {
	t, p, err := r.header()
	if err != nil {
		return 0, err
	}
	switch t {
	case ':':
		return parseInt(p)
	case '-':
		return 0, redis.Error(p)
	}
	return 0, r.unexpected(t, p, "integer")
}

// ReadOK reads a reply expected to be a status, as SET returns. Any status
// is accepted; a nil reply (SET … NX that did not set) is accepted too.
func (r *Reader) ReadOK() error {
	t, p, err := r.header()
	if err != nil {
		return err
	}
	switch t {
	case '+', '_':
		return nil
	case '-':
		return redis.Error(p)
	case '$', '*':
		if n, err := r.length(p); err == nil && n == -1 {
			return nil
		}
	}
	return r.unexpected(t, p, "status")
}

// ReadBulks reads an array of bulk strings into dst, as MGET returns; a
// missing key leaves a nil element. The array length must equal len(dst).
func (r *Reader) ReadBulks(dst [][]byte) error {
	t, p, err := r.header()
	if err != nil {
		return err
	}
	switch t {
	case '*':
	case '-':
		return redis.Error(p)
	default:
		return r.unexpected(t, p, "array")
	}
	n, err := r.arrayLength(t, p)
	if err != nil {
		return err
	}
	if n != int64(len(dst)) {
		// Still consume the elements so the stream stays in sync.
		for i := int64(0); i < n; i++ {
			if err := r.Skip(); err != nil {
				return err
			}
		}
		return protocolError("array of %d elements, want %d", n, len(dst))
	}
	var first error
	for i := range dst {
		v, err := r.ReadBulk()
		if err != nil {
			// An error reply or an element of another type is consumed:
			// read on so that the stream stays in sync.
			if Fatal(err) {
				return err
			}
			if first == nil {
				first = err
			}
		}
		dst[i] = v
	}
	return first
}

// unexpected consumes the rest of a reply that had the wrong type.
func (r *Reader) unexpected(t byte, p []byte, want string) error {
	if err := r.skipBody(t, p, 0); err != nil {
		return err
	}
	return &TypeError{Got: t, Want: want}
}

// TypeError reports a reply of another type than the command returns. The
// reply has been consumed: the stream is still in sync.
type TypeError struct {
	Got  byte   // the RESP type byte received
	Want string // what the caller expected
}

// Error names the type byte received and the type wanted.
func (e *TypeError) Error() string {
	return fmt.Sprintf("unexpected reply type %q, want %s", e.Got, e.Want)
}

// Fatal reports whether err, returned by a Reader method, leaves the stream
// unusable (an I/O or protocol error) rather than describing one reply (an
// error reply or a reply of an unexpected type).
func Fatal(err error) bool {
	switch err.(type) {
	case nil, redis.Error, *TypeError:
		return false
	}
	return true
}

// Skip reads and discards one reply of any type; an error reply is
// discarded too (it is data, not a failure of the stream).
func (r *Reader) Skip() error {
	t, p, err := r.header()
	if err != nil {
		return err
	}
	return r.skipBody(t, p, 0)
}

// skipBody discards the rest of a reply whose header has been read. It
// accepts exactly what anyBody accepts, and allocates nothing.
func (r *Reader) skipBody(t byte, p []byte, depth int) error {
	if depth > maxDepth {
		return protocolError("nesting too deep")
	}
	switch t {
	case '+', '-', '_', ',', '(':
		return nil
	case ':':
		_, err := parseInt(p)
		return err
	case '#':
		_, err := parseBool(p)
		return err
	case '$', '=', '!':
		n, err := r.length(p)
		if err != nil || n < 0 {
			return err
		}
		if n > MaxBulk {
			return protocolError("bulk length %d over limit", n)
		}
		if _, err := r.br.Discard(int(n)); err != nil {
			return err
		}
		return r.crlf()
	case '*', '~', '>', '%', '|':
		n, err := r.arrayLength(t, p)
		if err != nil || n < 0 {
			return err
		}
		if t == '|' {
			n++ // the attribute's pairs, then the reply it annotates
		}
		for i := int64(0); i < n; i++ {
			t2, p2, err := r.header()
			if err != nil {
				return err
			}
			if err := r.skipBody(t2, p2, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return protocolError("unknown reply type %q", t)
}

func parseBool(p []byte) (int64, error) {
	if len(p) != 1 || (p[0] != 't' && p[0] != 'f') {
		return 0, protocolError("bad boolean")
	}
	if p[0] == 't' {
		return 1, nil
	}
	return 0, nil
}

// ReadAny reads one reply of any type in redigo's representation. A
// top-level error reply is returned as the error (a redis.Error); nested
// error replies are elements of type redis.Error.
func (r *Reader) ReadAny() (any, error) {
	t, p, err := r.header()
	if err != nil {
		return nil, err
	}
	v, err := r.anyBody(t, p, 0)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(redis.Error); ok {
		return nil, e
	}
	return v, nil
}

const maxDepth = 64

func (r *Reader) anyBody(t byte, p []byte, depth int) (any, error) {
	if depth > maxDepth {
		return nil, protocolError("nesting too deep")
	}
	switch t {
	case '+':
		return string(p), nil
	case '-':
		return redis.Error(p), nil
	case ':':
		return parseInt(p)
	case '$', '=', '!':
		n, err := r.length(p)
		if err != nil || n < 0 {
			return nil, err
		}
		v, err := r.bulkBody(n)
		if err != nil {
			return nil, err
		}
		if t == '!' {
			return redis.Error(v), nil
		}
		return v, nil
	case '_':
		return nil, nil
	case ',', '(':
		return string(p), nil
	case '#':
		return parseBool(p)
	case '*', '~', '>', '%', '|':
		n, err := r.arrayLength(t, p)
		if err != nil || n < 0 {
			return nil, err
		}
		if t == '|' {
			// An attribute precedes the real reply: read and drop it.
			for i := int64(0); i < n; i++ {
				t2, p2, err := r.header()
				if err != nil {
					return nil, err
				}
				if err := r.skipBody(t2, p2, depth+1); err != nil {
					return nil, err
				}
			}
			t2, p2, err := r.header()
			if err != nil {
				return nil, err
			}
			return r.anyBody(t2, p2, depth+1)
		}
		vs := make([]any, 0, min(n, 1024))
		for i := int64(0); i < n; i++ {
			t2, p2, err := r.header()
			if err != nil {
				return nil, err
			}
			v, err := r.anyBody(t2, p2, depth+1)
			if err != nil {
				return nil, err
			}
			vs = append(vs, v)
		}
		return vs, nil
	}
	return nil, protocolError("unknown reply type %q", t)
}

// Wait blocks until at least one byte of the next reply is available.
func (r *Reader) Wait() error {
	_, err := r.br.Peek(1)
	return err
}

// Fill reads more of the stream into the buffer: at least one byte more,
// unless the buffer is full (bufio.ErrBufferFull). What is read stays buffered,
// so a read that fails (a deadline) loses nothing: a reply can be awaited
// whole (WholeN) under a deadline, and read by another goroutine when the
// wait is given up.
func (r *Reader) Fill() error {
	_, err := r.br.Peek(r.br.Buffered() + 1)
	return err
}

// Size returns the size of the read buffer: the largest reply that can
// be whole in it.
func (r *Reader) Size() int { return r.br.Size() }

// Whole reports whether a complete reply is at the head of the read
// buffer, so that reading it cannot block. It reads nothing from the
// stream; a malformed header counts as whole (reading it fails at once).
func (r *Reader) Whole() bool { return r.WholeN(1) }

// WholeN reports whether n complete replies are at the head of the read
// buffer, so that reading them cannot block: Whole for the replies of a
// pipeline. It reads nothing from the stream; a malformed header counts
// as whole, with every reply after it (reading it fails at once).
func (r *Reader) WholeN(n int) bool {
	b, _ := r.br.Peek(r.br.Buffered())
	for range n {
		m, ok := wholeReply(b, 0)
		switch {
		case !ok:
			return false
		case m == 0:
			return true
		}
		b = b[m:]
	}
	return true
}

// wholeReply returns the length of the complete reply at the start of b,
// and false when b ends before it does.
func wholeReply(b []byte, depth int) (int, bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return 0, false
	}
	if i < 2 || depth > maxDepth {
		return 0, true // malformed: the reader reports it
	}
	line, n := b[1:i-1], i+1
	switch b[0] {
	case '$', '=', '!':
		size, err := parseInt(line)
		if err != nil || size < 0 {
			return n, true
		}
		if int64(len(b)-n) < size+2 {
			return 0, false
		}
		return n + int(size) + 2, true
	case '*', '~', '>', '%', '|':
		count, err := parseInt(line)
		if err != nil || count < 0 {
			return n, true
		}
		if b[0] == '%' || b[0] == '|' {
			count *= 2
		}
		if b[0] == '|' {
			count++
		}
		for range count {
			m, ok := wholeReply(b[n:], depth+1)
			if !ok {
				return 0, false
			}
			n += m
		}
		return n, true
	}
	return n, true
}
