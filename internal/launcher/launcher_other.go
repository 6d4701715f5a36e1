//go:build !linux

package launcher

import "syscall"

// sysProcAttr returns nil where there is no parent-death signal: a server
// whose test binary dies unexpectedly keeps running until it is killed.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
