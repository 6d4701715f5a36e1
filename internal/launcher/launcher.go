// Package launcher starts real redis-server processes on free loopback ports,
// each in its own directory, for tests and benchmarks.
//
// A server is started with [Start] and listens on 127.0.0.1 only, with
// persistence switched off (--save "", --appendonly no) and its log written
// to <dir>/redis.log. Extra configuration directives are passed through
// [Options.Args]; they come after the launcher's own directives, so they
// may override persistence settings, but must not override --port, --bind,
// --dir, --logfile or --daemonize.
//
// On Linux every server is started with a parent-death signal (SIGKILL), so it
// does not outlive a test binary that dies unexpectedly. The server's standard
// output and error go to its log file, never to the caller's pipes, so a
// running server cannot make "go test" wait for it.
//
// [StartSentinel] starts a master, its replicas and sentinels monitoring it
// (redis-sentinel), for tests of failover.
//
// # In tests
//
// The module's tests start their servers with the helpers that take a
// testing.TB and stop what they started with tb.Cleanup: [Standalone] (or
// the server REDISX_TEST_ADDR names), [Private] (a server of the test's
// own, to configure, kill or restart), [ClusterForTest] (or the cluster
// REDISX_TEST_CLUSTER names) and [SentinelForTest]. Examples, which users
// read, start theirs with the public package redisxtest instead.
//
// The redis-server and redis-cli binaries are looked up on PATH; on Debian
// they come from the redis-server package (which pulls in redis-tools), and
// redis-sentinel from the redis-sentinel package.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
)

const (
	serverBinary = "redis-server"
	cliBinary    = "redis-cli"

	// defaultStartTimeout bounds Start and Restart when the caller's context
	// allows longer (or has no deadline).
	defaultStartTimeout = 10 * time.Second
	// stopTimeout is how long Stop waits after SHUTDOWN or SIGTERM before
	// SIGKILL.
	stopTimeout = 5 * time.Second
	// shutdownAskTimeout bounds Stop's SHUTDOWN command, before it falls
	// back to SIGTERM.
	shutdownAskTimeout = time.Second
	// startAttempts is how many times Start tries a new free port when the
	// one it picked was taken before redis-server could bind it.
	startAttempts = 3
	// logTailBytes is how much of the log an error message quotes at most.
	logTailBytes = 2048
	// logTailLines is how many lines of the log an error message quotes at most.
	logTailLines = 20
	// logName is the name of the log file inside the server's directory.
	logName = "redis.log"
)

// Available reports a clear error naming the Debian package to install when
// redis-server or redis-cli is not on PATH; it returns nil when both are.
func Available() error {
	var missing []string
	for _, bin := range []string{serverBinary, cliBinary} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("launcher: %s not found on PATH: install the Debian package redis-server "+
		"(it brings redis-tools with redis-cli), e.g. `sudo apt-get install -y redis-server`, "+
		"or run scripts/ensure-redis.sh", strings.Join(missing, " and "))
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: it
// listens on port 0, notes the port the kernel chose and closes the listener.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("launcher: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("launcher: find a free port: %w", err)
	}
	return port, nil
}

// Options configures a server started by [Start].
type Options struct {
	// Port is the TCP port to listen on at 127.0.0.1; 0 picks a free port.
	Port int
	// Dir is the server's working directory (RDB/AOF files and redis.log).
	// Empty means a new directory from os.MkdirTemp, removed by Stop.
	// A directory given here is created if missing and never removed.
	Dir string
	// Args are extra configuration directives, passed after the launcher's
	// own, e.g. []string{"--maxmemory", "10mb"}.
	Args []string
	// Password, if set, is passed as --requirepass and used by the readiness
	// check, by Restart and by CLI.
	Password string
	// TLS, if set, makes the server listen for TLS too, on a free port of
	// its own (see [Server.TLSAddr]) with TLS's certificate, not asking
	// clients for certificates. The plain port stays open: the readiness
	// check and CLI use it. The server must have been built with TLS.
	TLS *TLS
}

// Server is a redis-server process started by [Start], or an external server
// returned by [Standalone]. Its methods are safe for concurrent use.
type Server struct {
	addr     string // as given for an external server; else derived from host and port
	host     string
	port     int
	tlsPort  int // 0: no TLS
	busPort  int // a cluster node's bus port; 0 for other servers
	dir      string
	ownDir   bool // the launcher created dir and Stop removes it
	password string
	args     []string // full redis-server argument list, reused by Restart
	binary   string   // the program: serverBinary, or sentinelBinary for a sentinel
	external bool     // not started by the launcher: Kill and Restart fail

	mu      sync.Mutex
	proc    *process // the current process; nil before the first start
	stopped bool     // Stop has run to completion since the last start
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait has returned and the log is closed
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start starts redis-server as o says and waits until it answers PING, for at
// most 10 s or until ctx is done, whichever comes first. The server listens on
// 127.0.0.1 with persistence off, runs in the foreground and logs to
// <dir>/redis.log; when it cannot be started, the error quotes the end of that
// log. When o.Port is 0 and the chosen port is taken by someone else before
// the server binds it, Start tries a few other free ports.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if o.Port < 0 || o.Port > 65535 {
		return nil, fmt.Errorf("launcher: invalid port %d", o.Port)
	}
	s := &Server{host: "127.0.0.1", password: o.Password, binary: serverBinary}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "redisx-launcher-")
		if err != nil {
			return nil, fmt.Errorf("launcher: create temp dir: %w", err)
		}
		s.dir, s.ownDir = dir, true
	} else {
		dir, err := filepath.Abs(o.Dir)
		if err != nil {
			return nil, fmt.Errorf("launcher: dir %q: %w", o.Dir, err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("launcher: create dir: %w", err)
		}
		s.dir = dir
	}

	ctx, cancel := context.WithTimeout(ctx, defaultStartTimeout)
	defer cancel()

	attempts := 1
	if o.Port == 0 {
		attempts = startAttempts
	}
	var err error
	for i := 0; i < attempts; i++ {
		port := o.Port
		if port == 0 {
			if port, err = FreePort(); err != nil {
				break
			}
		}
		s.port = port
		if o.TLS != nil {
			// Picked anew on every attempt, like the plain port: another
			// process may take it before redis-server binds it.
			if s.tlsPort, err = FreePort(); err != nil {
				break
			}
		}
		s.args = buildArgs(port, s.tlsPort, s.dir, o)
		var inUse bool
		inUse, err = s.launch(ctx)
		if err == nil {
			return s, nil
		}
		if !inUse || ctx.Err() != nil {
			break
		}
	}
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
	}
	return nil, err
}

// buildArgs returns the redis-server command line for port, tlsPort (with
// o.TLS), dir and o.
func buildArgs(port, tlsPort int, dir string, o Options) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--daemonize", "no",
		"--logfile", filepath.Join(dir, logName),
		"--protected-mode", "no",
	}
	if o.Password != "" {
		args = append(args, "--requirepass", o.Password)
	}
	if o.TLS != nil {
		args = append(args, o.TLS.args(tlsPort)...)
	}
	return append(args, o.Args...)
}

// launch starts one redis-server process with s.args and waits until it is
// ready. On failure the process is gone, and inUse reports whether it failed
// because its port was taken. The caller must hold s.mu or own s exclusively.
func (s *Server) launch(ctx context.Context) (inUse bool, err error) {
	logPath := filepath.Join(s.dir, logName)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return false, fmt.Errorf("launcher: open log: %w", err)
	}
	// Only the part of the log written by this run is quoted in errors.
	var logStart int64
	if fi, err := logFile.Stat(); err == nil {
		logStart = fi.Size()
	}

	cmd := exec.Command(s.binary, s.args...)
	cmd.Dir = s.dir
	cmd.Stdin = nil // /dev/null
	// An *os.File is handed to the child as is: no copying goroutine, no pipe
	// that could keep the caller waiting.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return false, fmt.Errorf("launcher: start %s: %w", s.binary, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	s.proc = p
	s.stopped = false

	if err := s.waitReady(ctx, p); err != nil {
		p.kill()
		tail := readLogTail(logPath, logStart)
		inUse = strings.Contains(tail, "Address already in use")
		msg := fmt.Sprintf("launcher: %s on %s (dir %s): %v", s.binary, s.Addr(), s.dir, err)
		if tail != "" {
			msg += "\n--- end of " + logPath + " ---\n" + tail
		}
		return inUse, errors.New(msg)
	}
	return false, nil
}

// readLogTail returns at most the last logTailLines lines (and logTailBytes
// bytes) of the log at path written after offset from.
func readLogTail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	start := from
	if fi.Size()-start > logTailBytes {
		start = fi.Size() - logTailBytes
	}
	if start < 0 || start > fi.Size() {
		start = 0
	}
	buf := make([]byte, fi.Size()-start)
	n, _ := f.ReadAt(buf, start)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\r\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// kill sends SIGKILL to the process and waits for it to exit.
func (p *process) kill() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Addr returns the server's address: "127.0.0.1:port" for a server started by
// the launcher, the value of REDISX_TEST_ADDR for an external one.
func (s *Server) Addr() string {
	if s.addr != "" {
		return s.addr
	}
	return net.JoinHostPort(s.host, strconv.Itoa(s.port))
}

// Port returns the server's TCP port.
func (s *Server) Port() int { return s.port }

// TLSAddr returns the address of the server's TLS port, "127.0.0.1:port",
// or "" when it was started without [Options.TLS].
func (s *Server) TLSAddr() string {
	if s.tlsPort == 0 {
		return ""
	}
	return net.JoinHostPort(s.host, strconv.Itoa(s.tlsPort))
}

// Dir returns the server's working directory; it is empty for an external
// server.
func (s *Server) Dir() string { return s.dir }

// Kill sends SIGKILL to the server and waits for it to exit, simulating a
// crash. The directory is kept, so [Server.Restart] can start the server
// again. Kill is idempotent; it fails only for an external server.
func (s *Server) Kill() error {
	if s.external {
		return fmt.Errorf("launcher: cannot kill external server %s", s.Addr())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
	}
	return nil
}

// Restart starts the server again after Kill or Stop, on the same port and in
// the same directory (created again if Stop removed it) with the same
// arguments, and waits until it is ready, bounded by ctx and 10 s. While the
// port is momentarily busy it retries until that bound. Restart fails if the
// server is still running, and for an external server.
func (s *Server) Restart(ctx context.Context) error {
	if s.external {
		return fmt.Errorf("launcher: cannot restart external server %s", s.Addr())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return fmt.Errorf("launcher: restart %s: server is still running; Kill or Stop it first", s.Addr())
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("launcher: restart: create dir: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, defaultStartTimeout)
	defer cancel()
	for {
		inUse, err := s.launch(ctx)
		if err == nil {
			return nil
		}
		if !inUse || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop asks the server to shut down (SHUTDOWN, or SIGTERM when it cannot be
// asked), waits up to 5 s for it to exit (then sends SIGKILL and waits
// again) and removes the directory if the launcher created it. Stop is
// idempotent, and a no-op for an external server.
func (s *Server) Stop() error {
	if s.external {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	if p := s.proc; p != nil && !p.exited() {
		if !s.shutdown() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		timer := time.NewTimer(stopTimeout)
		select {
		case <-p.done:
			timer.Stop()
		case <-timer.C:
			p.kill()
		}
	}
	s.stopped = true
	if s.ownDir {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("launcher: remove %s: %w", s.dir, err)
		}
	}
	return nil
}

// shutdown sends SHUTDOWN to the server and reports whether it is shutting
// down (it closed the connection rather than answer). A server shuts down
// on SHUTDOWN at once, as it does on SIGTERM (saving only when save points
// are configured); on SIGTERM it waits for the next run of its cron, up to
// 100 ms at the default hz of 10, which hundreds of servers started and
// stopped by a test suite add up. The caller must hold s.mu.
func (s *Server) shutdown() bool {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownAskTimeout)
	defer cancel()
	c, err := dial(ctx, s)
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = redis.DoWithTimeout(c, shutdownAskTimeout, "SHUTDOWN")
	var reply redis.Error
	return err != nil && !errors.As(err, &reply) && !isTimeout(err)
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// CLI runs redis-cli against the server with args (adding -a and
// --no-auth-warning when the server has a password) and returns its output,
// trimmed of surrounding white space. An error reply from the server, such as
// NOAUTH or an unknown command, makes CLI return an error along with the
// output.
func (s *Server) CLI(ctx context.Context, args ...string) (string, error) {
	cliArgs := []string{"-e", "-h", s.host, "-p", strconv.Itoa(s.port)}
	if s.password != "" {
		cliArgs = append(cliArgs, "-a", s.password, "--no-auth-warning")
	}
	cliArgs = append(cliArgs, args...)
	cmd := exec.CommandContext(ctx, cliBinary, cliArgs...)
	cmd.Stdin = nil
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		if text != "" {
			return text, fmt.Errorf("launcher: redis-cli %s: %w: %s", strings.Join(args, " "), err, text)
		}
		return text, fmt.Errorf("launcher: redis-cli %s: %w", strings.Join(args, " "), err)
	}
	return text, nil
}
