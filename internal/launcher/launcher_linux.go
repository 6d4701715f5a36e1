//go:build linux

package launcher

import "syscall"

// sysProcAttr makes the kernel send SIGKILL to a started redis-server when the
// thread that started it (and so the test binary) dies. Go does not end the
// threads it runs goroutines on, so in practice this fires when the process
// dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
