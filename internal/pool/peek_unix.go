//go:build unix

package pool

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// peerGone reports whether an idle connection can no longer carry a call:
// the server closed it (a restart, an idle timeout, CLIENT KILL), or the
// socket failed. It looks without reading: one non-blocking MSG_PEEK
// receive. On a plain connection, bytes waiting while nobody asked for
// any are a stream out of step, and also make it unusable; a TLS
// connection may legitimately hold records nobody asked for (session
// tickets), so only the end of the stream counts there.
func peerGone(nc net.Conn) bool {
	strict := true
	if tc, ok := nc.(*tls.Conn); ok {
		nc, strict = tc.NetConn(), false
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n == 0 && err == nil: // end of stream
			gone = true
		case n > 0:
			gone = strict
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		default:
			gone = true
		}
		return true // never wait for the socket
	})
	return gone || err != nil
}
