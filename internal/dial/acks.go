package dial

import (
	"net"
	"syscall"
)

// Acks tells how much of what was written on a plain TCP connection has
// reached its peer: a write returns once the kernel has the bytes, and on
// a thin link the kernel's send buffer may hold most of a big request for
// a long time after that. The transports use it so that the ReadTimeout
// rule times the wait for a reply, not the upload of its request. The
// zero Acks (another system, a TLS connection — whose bytes written are
// not those on the wire —, an older kernel) knows nothing.
type Acks struct{ rc syscall.RawConn }

// AcksOf returns nc's Acks: the zero Acks unless nc is a plain TCP
// connection whose socket can tell.
func AcksOf(nc net.Conn) Acks {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return Acks{}
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return Acks{}
	}
	a := Acks{rc}
	if _, _, ok := a.Read(); !ok {
		return Acks{}
	}
	return a
}

// Read returns the bytes the peer has acknowledged since the connection
// opened, and those written but not yet acknowledged (still in the send
// buffer); ok is false when the socket cannot tell.
func (a Acks) Read() (acked, unacked int64, ok bool) {
	if a.rc == nil {
		return 0, 0, false
	}
	err := a.rc.Control(func(fd uintptr) { acked, unacked, ok = readAcks(fd) })
	return acked, unacked, ok && err == nil
}
