package wire

import (
	"cmp"
	"strings"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/resp"
)

// Reply is where one command's reply is decoded: which decoder to use and
// the destination of each kind.
type Reply struct {
	Kind ReplyKind
	N    int // replyOK: status replies expected (a run of SETs)

	Val  []byte
	Vals [][]byte // replyBulks: one element per key, nil where missing
	Num  int64
	Any  any
	Err  error // reply-level error: a server error reply or a wrong type
}

type ReplyKind uint8

const (
	ReplyBulk  ReplyKind = iota // GET
	ReplyOK                     // n status replies: SET, MSET, ASKING
	ReplyInt                    // DEL
	ReplyBulks                  // MGET into vals
	ReplyAny                    // any command
	ReplyPipe                   // several commands: see call.pipe
)

// Read decodes rp's reply from r. Reply-level errors are stored in rp.Err
// (of a run of status replies, ReplyOK, the first — but a refusal the
// server closes after, see Closes, which is the last it sends, and which
// both the caller and the connection must hear of); stream-level errors,
// after which r is unusable, are returned. A run cut by a stream error
// keeps in rp.Err the error of the last reply read before it (nil when
// that reply was not an error, or none was read): the refusal, if the
// server refused the command and closed (see CutError).
func (rp *Reply) Read(r *resp.Reader) error {
	var err error
	switch rp.Kind {
	case ReplyBulk:
		rp.Val, err = r.ReadBulk()
	case ReplyInt:
		rp.Num, err = r.ReadInt()
	case ReplyBulks:
		err = r.ReadBulks(rp.Vals)
	case ReplyAny:
		rp.Any, err = r.ReadAny()
	case ReplyOK:
		var last error // the last reply's error
		for i := 0; i < max(rp.N, 1); i++ {
			e := r.ReadOK()
			if resp.Fatal(e) {
				rp.Err = last
				return e
			}
			last = e
			if err == nil || e != nil && Closes(e) {
				err = e
			}
		}
	}
	if resp.Fatal(err) {
		return err
	}
	rp.Err = err
	return nil
}

// Count is the number of replies rp decodes.
func (rp *Reply) Count() int {
	if rp.Kind == ReplyOK {
		return max(rp.N, 1)
	}
	return 1
}

// ReadAll decodes the replies of a pipeline in order.
func ReadAll(r *resp.Reader, rps []Reply) error {
	_, err := ReadSome(r, rps)
	return err
}

// ReadSome is ReadAll that also returns how many replies it decoded: all
// of them, or those before the stream error it returns — and the one it
// cut, a run of status replies whose last reply read was an error (see
// Read), which may be the server's refusal (see CutError).
func ReadSome(r *resp.Reader, rps []Reply) (int, error) {
	for i := range rps {
		if err := rps[i].Read(r); err != nil {
			if rps[i].Kind == ReplyOK && rps[i].Err != nil {
				return i + 1, err
			}
			return i, err
		}
	}
	return len(rps), nil
}

// CutError is the failure of a request that the server refused part way
// and then closed. A server that refuses a request as it reads it, and
// closes the connection with the rest of it unread — as Redis does on a
// protocol error: a bulk over proto-max-bulk-len, a malformed request —
// answers the commands before the refused one, then sends the refusal (an
// error reply), and nothing more: the commands after it never ran. The
// client sees its write reset part way, or the stream end right after the
// refusal; the refusal, not the reset, is the call's error.
//
// A CutError reads as Refusal, and unwraps to it only, so that errors.As
// finds the server's redis.Error and errors.Is does not find
// backend.ErrConnection; the commands after the refused one get Err.
type CutError struct {
	N       int   // replies decoded, the refusal last
	Refusal error // the refusal, as the call returns it
	Err     error // the connection's failure, for the commands after it
}

func (e *CutError) Error() string { return e.Refusal.Error() }
func (e *CutError) Unwrap() error { return e.Refusal }

// Cut returns the failure of a request whose write failed with werr (nil
// when it was sent whole) and whose replies' read stopped with the stream
// error rerr (nil when they were all read), n of them decoded, the last
// with the error last (a reply-level error, or nil). It is a *CutError
// with last, raw, as its refusal when last is an error reply and the peer
// ended the connection right after it: werr is not nil (a write that
// failed part way, its replies read since: the peer reset it) or rerr is
// the peer's end (see failure.PeerClosed). Otherwise it is werr, or else
// rerr.
func Cut(werr, rerr, last error, n int) error {
	if werr == nil && rerr == nil {
		return nil
	}
	cause := cmp.Or(werr, rerr)
	if re, ok := last.(redis.Error); ok && (werr != nil || failure.PeerClosed(rerr)) {
		return &CutError{N: n, Refusal: re, Err: cause}
	}
	return cause
}

// Closes reports whether err, a reply-level error, is one after which the
// server may close the connection: Redis answers a request it cannot read
// — a bulk over proto-max-bulk-len, a malformed request — with "ERR
// Protocol error: …", then closes (networking.c, setProtocolError). The
// connection must take no other call. A script may return an error that
// reads the same (redis.error_reply), and the server then goes on: the
// calls already sent on the connection are answered.
func Closes(err error) bool {
	re, ok := err.(redis.Error)
	return ok && strings.HasPrefix(string(re), "ERR Protocol error")
}

// Closing reports whether one of the replies of rps is an error after
// which the server may close the connection (see Closes).
func Closing(rps []Reply) bool {
	for i := range rps {
		if rps[i].Err != nil && Closes(rps[i].Err) {
			return true
		}
	}
	return false
}
