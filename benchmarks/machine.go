package benchmarks

import (
	"os"
	"strings"
)

// cpuModel is the processor's name from /proc/cpuinfo ("model name" on
// x86, "Model" or "Hardware" on some ARM boards); empty where there is no
// such file. A baseline recorded on another processor is not compared
// like with like.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	var fallback string
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k, v = strings.TrimSpace(k), strings.TrimSpace(v); k {
		case "model name":
			return v
		case "Model", "Hardware":
			if fallback == "" {
				fallback = v
			}
		}
	}
	return fallback
}
