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

// TestHarnessLayout keeps the harness's packages in their places: none of
// benchmarks' sub-packages imports benchmarks (the CLI aside, which sits
// above it), not even in tests; of the harness's code, benchmarks/target
// alone imports the peers rueidis and go-redis; and benchmarks/verdict
// does no I/O (no file, network or system call package of its own).
func TestHarnessLayout(t *testing.T) {
	const harness = "github.com/redisx-go/kit/benchmarks"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} | {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./benchmarks/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		code, tests, _ := strings.Cut(line, "|")
		f := strings.Fields(code)
		if len(f) == 0 {
			continue
		}
		pkg := f[0]
		sub := strings.HasPrefix(pkg, harness+"/") && !within(pkg, harness+"/cmd")
		for _, imp := range f[1:] {
			switch {
			case pkg != harness+"/target" && (within(imp, "github.com/redis/rueidis") || within(imp, "github.com/redis/go-redis/v9")):
				t.Errorf("%s imports the peer %s: only benchmarks/target may", pkg, imp)
			case pkg == harness+"/verdict" && (imp == "os" || imp == "syscall" || within(imp, "net") || within(imp, "io/fs") || within(imp, "github.com/redisx-go/kit/redisx")):
				t.Errorf("benchmarks/verdict imports %s: it does no I/O", imp)
			}
		}
		for _, imp := range append(f[1:], strings.Fields(tests)...) {
			if sub && imp == harness {
				t.Errorf("%s imports benchmarks: a sub-package never imports the package above it", pkg)
			}
		}
	}
}
