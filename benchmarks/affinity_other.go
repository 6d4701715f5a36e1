//go:build !linux

package benchmarks

import "errors"

// keepOffCPU is Linux only: elsewhere the client shares the servers' CPU.
func keepOffCPU(int) (int, error) {
	return 0, errors.New("CPU affinity is set on Linux only")
}
