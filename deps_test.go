package kit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryImportsNoPeer keeps the benchmark peers out of the library:
// rueidis is measured against, never depended on.
func TestLibraryImportsNoPeer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./redisx/...", "./strategy/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, peer := range []string{"github.com/redis/rueidis"} {
			if dep == peer || strings.HasPrefix(dep, peer+"/") {
				t.Errorf("library depends on peer %s", dep)
			}
		}
	}
}
