package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/redisx-go/kit/internal/resp"
)

const refusal = "ERR Protocol error: invalid bulk length"

// TestCutRunOfStatusRepliesReportsTheLastReplyBeforeTheEnd: a run of
// status replies (a run of SETs) whose stream ends right after an error
// reply was refused by that reply: Cut reports it, not an earlier error
// of the run (an OOM, say, of a SET the server ran before the refused
// one). A run whose last reply before the end is not an error was not
// refused: Cut reports the stream's end. In a pipeline, such a run is
// counted among the replies decoded, the refusal last.
func TestCutRunOfStatusRepliesReportsTheLastReplyBeforeTheEnd(t *testing.T) {
	const oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	for _, tc := range []struct {
		name   string
		stream string // the replies, then the end of the stream
		want   string // the refusal Cut reports; "" for none
	}{
		{"refused after another error", "+OK\r\n" + oom + "-" + refusal + "\r\n", refusal},
		{"refused first", "-" + refusal + "\r\n", refusal},
		{"an error, then a reply, then the end", oom + "+OK\r\n", ""},
		{"the end before any reply", "", ""},
	} {
		rp := Reply{Kind: ReplyOK, N: 4}
		rerr := rp.Read(resp.NewReader(strings.NewReader(tc.stream), 4096))
		if rerr == nil {
			t.Fatalf("%s: Read of 4 status replies from a stream of fewer = nil; want the stream's end", tc.name)
		}
		checkCut(t, tc.name, Cut(nil, rerr, rp.Err, 1), 1, tc.want)

		// The same run in a pipeline, after a reply of its own.
		rps := []Reply{{Kind: ReplyOK}, {Kind: ReplyOK, N: 4}, {Kind: ReplyOK}}
		n, rerr := ReadSome(resp.NewReader(strings.NewReader("+OK\r\n"+tc.stream), 4096), rps)
		var last error
		if n > 0 {
			last = rps[n-1].Err
		}
		checkCut(t, tc.name+", in a pipeline", Cut(nil, rerr, last, n), 2, tc.want)
	}
}

// checkCut checks err, Cut's result: a *CutError of n replies refused by
// want, or, want empty, no CutError.
func checkCut(t *testing.T, name string, err error, n int, want string) {
	t.Helper()
	var cut *CutError
	switch {
	case want == "" && errors.As(err, &cut):
		t.Errorf("%s: Cut = refusal %q after %d replies; want the stream's end, no refusal", name, cut.Refusal, cut.N)
	case want == "":
	case !errors.As(err, &cut):
		t.Errorf("%s: Cut = %v (%T); want the refusal %q", name, err, err, want)
	case cut.Refusal.Error() != want || cut.N != n:
		t.Errorf("%s: Cut = refusal %q after %d replies; want %q after %d", name, cut.Refusal, cut.N, want, n)
	}
}

// TestReadRunEndingInARefusalReportsTheRefusal: a run of status replies
// (a run of SETs) whose last reply is the server's refusal (a SET over
// proto-max-bulk-len, the last of the run), read whole before the server's
// close is met, keeps the refusal in its error, not an earlier SET's
// error (an OOM): the server closes after it (see Closes), and both the
// caller's error and the connection's fate depend on it. Without a
// refusal, the run's error is its first.
func TestReadRunEndingInARefusalReportsTheRefusal(t *testing.T) {
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	for _, tc := range []struct {
		name, stream, want string
	}{
		{"an error, then the refusal", "-" + oom + "\r\n-" + refusal + "\r\n", refusal},
		{"OK, then the refusal", "+OK\r\n-" + refusal + "\r\n", refusal},
		{"two errors", "-" + oom + "\r\n-ERR other\r\n", oom},
		{"an error, then OK", "-" + oom + "\r\n+OK\r\n", oom},
	} {
		rp := Reply{Kind: ReplyOK, N: 2}
		if err := rp.Read(resp.NewReader(strings.NewReader(tc.stream), 4096)); err != nil {
			t.Fatalf("%s: Read = %v", tc.name, err)
		}
		if rp.Err == nil || rp.Err.Error() != tc.want {
			t.Errorf("%s: the run's error = %v; want %q", tc.name, rp.Err, tc.want)
		}
		if got := rp.Err != nil && Closes(rp.Err); got != (tc.want == refusal) {
			t.Errorf("%s: Closes(the run's error) = %v; want %v", tc.name, got, tc.want == refusal)
		}
	}
}
