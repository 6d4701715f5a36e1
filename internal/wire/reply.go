package wire

import (
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

// Read decodes rp's reply from r. Reply-level errors are stored in rp.err;
// stream-level errors, after which r is unusable, are returned.
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
		for i := 0; i < max(rp.N, 1); i++ {
			e := r.ReadOK()
			if resp.Fatal(e) {
				return e
			}
			if err == nil {
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
	for i := range rps {
		if err := rps[i].Read(r); err != nil {
			return err
		}
	}
	return nil
}
