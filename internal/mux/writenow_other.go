//go:build !(darwin || linux || openbsd)

package mux

import (
	"net"
	"syscall"
)

// rawConn returns nil: writeNow is not available here, and a write of
// more than a chunk is left to the writer goroutine whole.
func rawConn(net.Conn) syscall.RawConn { return nil }

// writeNow is never called where rawConn returns nil.
func writeNow(syscall.RawConn, [][]byte) (int, error) { return 0, nil }
