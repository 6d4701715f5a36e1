//go:build !unix

package pool

import "net"

// peerGone is the check of an idle connection before reuse (see the unix
// version); without a non-blocking peek, a connection is assumed usable
// and a dead one is found by its first call.
func peerGone(net.Conn) bool { return false }
