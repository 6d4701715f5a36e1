package kit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// deps lists the packages pkgs link, as go list -deps does.
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %v: %v\n%s", pkgs, err, out)
	}
	return strings.Fields(string(out))
}

func within(dep, module string) bool { return dep == module || strings.HasPrefix(dep, module+"/") }

// TestLibraryImportsNoPeer keeps the benchmark peers out of the library:
// rueidis is measured against, never depended on.
func TestLibraryImportsNoPeer(t *testing.T) {
	for _, dep := range deps(t, "./backend/...", "./redisx/...", "./strategy/...", "./localcache/...") {
		if within(dep, "github.com/redis/rueidis") {
			t.Errorf("library depends on peer %s", dep)
		}
	}
}

// TestFacadeLinksNoGoRedis: a program that imports only redisx and
// strategy (a Multiplexed or Pool service) links neither go-redis — only
// strategy/goredis's importers do — nor a peer, nor the harness's HDR
// histograms.
func TestFacadeLinksNoGoRedis(t *testing.T) {
	for _, dep := range deps(t, "./redisx", "./strategy") {
		for _, m := range []string{"github.com/redis/go-redis", "github.com/redis/rueidis", "github.com/HdrHistogram/hdrhistogram-go"} {
			if within(dep, m) {
				t.Errorf("redisx and strategy link %s", dep)
			}
		}
	}
}

// TestInternalImportsNoFacade: the machinery under internal/ never imports
// the facade (redisx, or redisxtest, which wraps it), not even in its
// tests — a test of the facade's behaviour belongs to redisx — and the
// examples never import internal/ packages.
func TestInternalImportsNoFacade(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./internal/...", "./examples/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := f[0]
		for _, imp := range f[1:] {
			switch {
			case strings.Contains(pkg, "/internal/") && (within(imp, "github.com/redisx-go/kit/redisx") || within(imp, "github.com/redisx-go/kit/redisxtest")):
				t.Errorf("%s imports the facade %s", pkg, imp)
			case strings.Contains(pkg, "/examples/") && strings.Contains(imp, "github.com/redisx-go/kit/internal/"):
				t.Errorf("example %s imports %s", pkg, imp)
			}
		}
	}
}
