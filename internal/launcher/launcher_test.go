package launcher_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/launcher"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// requireRedis skips or fails t as launcher.Standalone would when redis-server
// is not installed.
func requireRedis(t *testing.T) {
	t.Helper()
	if err := launcher.Available(); err != nil {
		if os.Getenv("REDISX_SKIP_NO_REDIS") == "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// start starts a server for t and stops it when t ends.
func start(t *testing.T, o launcher.Options) *launcher.Server {
	t.Helper()
	requireRedis(t)
	s, err := launcher.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustCLI(t *testing.T, s *launcher.Server, args ...string) string {
	t.Helper()
	out, err := s.CLI(ctx(t), args...)
	if err != nil {
		t.Fatalf("CLI %v: %v", args, err)
	}
	return out
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func TestFreePort(t *testing.T) {
	t.Parallel()
	p, err := launcher.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if p <= 0 || p > 65535 {
		t.Fatalf("FreePort = %d", p)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d from FreePort is not free: %v", p, err)
	}
	_ = l.Close()
}

func TestStartPingStop(t *testing.T) {
	t.Parallel()
	requireRedis(t)
	s, err := launcher.Start(t.Context(), launcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "127.0.0.1:" + strconv.Itoa(s.Port()); s.Addr() != want {
		t.Errorf("Addr = %q, want %q", s.Addr(), want)
	}
	if got := mustCLI(t, s, "ping"); got != "PONG" {
		t.Errorf("PING = %q, want PONG", got)
	}
	mustCLI(t, s, "set", "k", "v")
	if got := mustCLI(t, s, "get", "k"); got != "v" {
		t.Errorf("GET k = %q, want v", got)
	}
	if got := mustCLI(t, s, "config", "get", "bind"); !strings.HasSuffix(got, "127.0.0.1") {
		t.Errorf("CONFIG GET bind = %q", got)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "redis.log")); err != nil {
		t.Errorf("log file: %v", err)
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s still there after Stop: %v", s.Dir(), err)
	}
	if dialable(s.Addr()) {
		t.Errorf("%s still accepts connections after Stop", s.Addr())
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := s.Kill(); err != nil {
		t.Errorf("Kill after Stop: %v", err)
	}
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := start(t, launcher.Options{})
	port := s.Port()
	if err := s.Restart(ctx(t)); err == nil {
		t.Error("Restart of a running server succeeded")
	}
	mustCLI(t, s, "set", "k", "v")

	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if dialable(s.Addr()) {
		t.Fatalf("%s still accepts connections after Kill", s.Addr())
	}
	if _, err := s.CLI(ctx(t), "ping"); err == nil {
		t.Error("CLI PING succeeded against a killed server")
	}
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Fatalf("dir gone after Kill: %v", err)
	}

	if err := s.Restart(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if s.Port() != port {
		t.Errorf("port changed from %d to %d", port, s.Port())
	}
	if got := mustCLI(t, s, "ping"); got != "PONG" {
		t.Errorf("PING after Restart = %q", got)
	}
	if got := mustCLI(t, s, "exists", "k"); got != "0" {
		t.Errorf("EXISTS k after crash without persistence = %q, want 0", got)
	}

	// Stop, then Restart: the removed temp dir comes back and the server too.
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := mustCLI(t, s, "ping"); got != "PONG" {
		t.Errorf("PING after Stop+Restart = %q", got)
	}
}

func TestPassword(t *testing.T) {
	t.Parallel()
	s := start(t, launcher.Options{Password: "s3cret"})
	if got := mustCLI(t, s, "ping"); got != "PONG" {
		t.Errorf("PING with password = %q", got)
	}

	noAuth := func() string {
		t.Helper()
		cmd := exec.CommandContext(ctx(t), "redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port()), "ping")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := noAuth(); !strings.Contains(out, "NOAUTH") {
		t.Errorf("PING without password = %q, want NOAUTH", out)
	}

	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := mustCLI(t, s, "ping"); got != "PONG" {
		t.Errorf("PING after Restart = %q", got)
	}
	if out := noAuth(); !strings.Contains(out, "NOAUTH") {
		t.Errorf("PING without password after Restart = %q, want NOAUTH", out)
	}
}

func TestArgsAndDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, launcher.Options{Dir: dir, Args: []string{"--maxmemory", "10mb"}})
	if s.Dir() != dir {
		t.Errorf("Dir = %q, want %q", s.Dir(), dir)
	}
	if got := mustCLI(t, s, "config", "get", "maxmemory"); got != "maxmemory\n10485760" {
		t.Errorf("CONFIG GET maxmemory = %q", got)
	}
	if got := mustCLI(t, s, "config", "get", "dir"); !strings.HasSuffix(got, "\n"+dir) {
		t.Errorf("CONFIG GET dir = %q, want %s", got, dir)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("caller's dir removed by Stop: %v", err)
	}
}

func TestCLIErrorReply(t *testing.T) {
	t.Parallel()
	s := start(t, launcher.Options{})
	out, err := s.CLI(ctx(t), "no-such-command")
	if err == nil {
		t.Fatalf("CLI of an unknown command succeeded: %q", out)
	}
	if !strings.Contains(out, "unknown command") {
		t.Errorf("output = %q, want the error reply", out)
	}
}

func TestStartBadDirective(t *testing.T) {
	t.Parallel()
	requireRedis(t)
	dir := t.TempDir()
	_, err := launcher.Start(t.Context(), launcher.Options{Dir: dir, Args: []string{"--no-such-directive", "x"}})
	if err == nil {
		t.Fatal("Start with a bad directive succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("error does not quote the log: %v", err)
	}
}

func TestStartPortInUse(t *testing.T) {
	t.Parallel()
	requireRedis(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = launcher.Start(t.Context(), launcher.Options{Port: port})
	if err == nil {
		t.Fatal("Start on a busy port succeeded")
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Errorf("error does not say the port is in use: %v", err)
	}
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	var dir string
	t.Run("use", func(t *testing.T) {
		s := launcher.Standalone(t, launcher.Options{})
		dir = s.Dir()
		if got := mustCLI(t, s, "ping"); got != "PONG" {
			t.Errorf("PING = %q", got)
		}
		if launcher.External() {
			if err := s.Kill(); err == nil {
				t.Error("Kill of an external server succeeded")
			}
			if err := s.Restart(ctx(t)); err == nil {
				t.Error("Restart of an external server succeeded")
			}
		}
	})
	if launcher.External() || dir == "" {
		return
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s left behind by Standalone's cleanup: %v", dir, err)
	}
}

func TestStandaloneExternal(t *testing.T) {
	// Not parallel: t.Setenv.
	backing := start(t, launcher.Options{})
	t.Setenv("REDISX_TEST_ADDR", backing.Addr())
	if !launcher.External() {
		t.Fatal("External() = false with REDISX_TEST_ADDR set")
	}
	s := launcher.Standalone(t, launcher.Options{})
	if s.Addr() != backing.Addr() {
		t.Errorf("Addr = %q, want %q", s.Addr(), backing.Addr())
	}
	if got := mustCLI(t, s, "ping"); got != "PONG" {
		t.Errorf("PING = %q", got)
	}
	if err := s.Kill(); err == nil {
		t.Error("Kill of an external server succeeded")
	}
	if err := s.Restart(ctx(t)); err == nil {
		t.Error("Restart of an external server succeeded")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop of an external server: %v", err)
	}
	if !dialable(backing.Addr()) {
		t.Error("Stop of the external handle stopped the real server")
	}
}

func TestPinLast(t *testing.T) {
	t.Parallel()
	s := start(t, launcher.Options{})
	ok, note := launcher.PinLast(ctx(t), s)
	_, tasksetErr := exec.LookPath("taskset")
	if runtime.NumCPU() < 2 || tasksetErr != nil {
		if ok || note == "" {
			t.Fatalf("PinLast on %d CPUs (taskset: %v) = %v, %q; want false and why", runtime.NumCPU(), tasksetErr, ok, note)
		}
		t.Skipf("cannot pin here: %s", note)
	}
	if !ok {
		t.Fatalf("PinLast = false, %q", note)
	}
	last := strconv.Itoa(runtime.NumCPU() - 1)
	if !strings.Contains(note, "1 redis-server process on CPU "+last+" ") {
		t.Errorf("note %q does not say where", note)
	}
	// Every thread of the server, not only its main one.
	var pid string
	for _, line := range strings.Split(mustCLI(t, s, "INFO", "server"), "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); found {
			pid = v
		}
	}
	out, err := exec.Command("taskset", "-a", "-p", pid).CombinedOutput()
	if err != nil {
		t.Fatalf("taskset -a -p %s: %v: %s", pid, err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mask, _ := strconv.ParseUint(strings.TrimSpace(line[strings.LastIndex(line, ":")+1:]), 16, 64)
		if mask != 1<<(runtime.NumCPU()-1) {
			t.Errorf("after PinLast: %s; want only CPU %s in the mask", line, last)
		}
	}
	if ok, note := launcher.PinLast(ctx(t)); ok || note == "" {
		t.Errorf("PinLast() of no server = %v, %q; want false and why", ok, note)
	}
}
