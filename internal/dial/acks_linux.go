//go:build linux && (amd64 || arm64)

package dial

import (
	"syscall"
	"unsafe"
)

// readAcks reads tcpi_bytes_acked of the socket's TCP_INFO (Linux 4.2 and
// later) and its send queue (SIOCOUTQ: bytes written, not yet
// acknowledged). A connection no longer established tells nothing: the
// peer closed it (a server refusing a request replies, then closes), and
// will read no more of what is queued.
func readAcks(fd uintptr) (acked, unacked int64, ok bool) {
	var info [32]uint64 // struct tcp_info, as much of it as the kernel fills
	size := uint32(unsafe.Sizeof(info))
	if _, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
		uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0); e != 0 || size < 128 {
		return 0, 0, false
	}
	if uint8(info[0]) != tcpEstablished { // tcpi_state, the first byte (little-endian)
		return 0, 0, false
	}
	var queued int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&queued))); e != 0 {
		return 0, 0, false
	}
	return int64(info[15]), int64(queued), true // tcpi_bytes_acked is at byte 120
}

// tcpEstablished is TCP_ESTABLISHED, a tcpi_state.
const tcpEstablished = 1
