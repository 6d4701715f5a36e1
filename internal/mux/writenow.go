//go:build darwin || linux || openbsd

package mux

import (
	"errors"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// nowWriter writes to a socket without waiting (see writeNow). A
// connection has one, used by its write side's holder; its function is
// bound once, so that a write allocates nothing.
type nowWriter struct {
	rc syscall.RawConn
	fn func(fd uintptr) bool // w.write

	// One writeNow's arguments and results.
	bufs   [][]byte
	n      int
	err    error
	called bool
}

// newNowWriter returns the nowWriter of nc: nil when nc is not a plain
// socket (TLS).
func newNowWriter(nc net.Conn) *nowWriter {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &nowWriter{rc: rc}
	w.fn = w.write
	return w
}

// writeNow writes bufs, in order, with one system call that does not
// wait, and returns how many bytes it wrote: all of them, or fewer when
// the socket's buffer filled (not an error). It never blocks. The slices
// bufs holds are not changed.
func (w *nowWriter) writeNow(bufs [][]byte) (int, error) {
	w.bufs, w.n, w.err, w.called = bufs, 0, nil, false
	werr := w.rc.Write(w.fn)
	n, err, called := w.n, w.err, w.called
	w.bufs, w.err = nil, nil
	switch {
	case err != nil:
		return n, err
	case !called && errors.Is(werr, os.ErrDeadlineExceeded):
		// A write deadline the writer goroutine left behind, passed:
		// nothing written, the writer goroutine writes it all.
		return 0, nil
	}
	return n, werr
}

// write is the RawConn's callback: one writev, done whatever it wrote.
func (w *nowWriter) write(fd uintptr) bool {
	w.called = true
	for {
		m, e := unix.Writev(int(fd), w.bufs)
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			// Full: the rest waits for the writer goroutine.
		case e != nil:
			w.err = os.NewSyscallError("writev", e)
		default:
			w.n = m
		}
		return true
	}
}
