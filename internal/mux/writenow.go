//go:build darwin || linux || openbsd

package mux

import (
	"errors"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawConn returns the raw connection of nc for writeNow: nil when nc is
// not a plain socket (TLS), or writeNow cannot use it.
func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// writeNow writes bufs, in order, with one system call that does not
// wait, and returns how many bytes it wrote: all of them, or fewer when
// the socket's buffer filled (not an error). It never blocks. The slices
// bufs holds are not changed.
func writeNow(rc syscall.RawConn, bufs [][]byte) (n int, err error) {
	called := false
	werr := rc.Write(func(fd uintptr) bool {
		called = true
		for {
			m, e := unix.Writev(int(fd), bufs)
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
				// Full: the rest waits for the writer goroutine.
			case e != nil:
				err = os.NewSyscallError("writev", e)
			default:
				n = m
			}
			return true
		}
	})
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
