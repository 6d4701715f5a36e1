//go:build !unix

package benchmarks

import "time"

// processCPU is not measured on this system: CPU per op reads 0.
func processCPU() time.Duration { return 0 }
