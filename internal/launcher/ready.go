package launcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Knowing when a started server is ready, and that it is ours: the probe
// speaks just enough RESP for AUTH, PING and INFO, without a client.

// waitReady polls the server until it answers PING and reports the process
// id of p, p exits, or ctx is done.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	// A probe in flight is abandoned as soon as the process exits: whoever
	// else holds the port may accept the connection and never answer.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()

	var lastErr error
	delay := 5 * time.Millisecond
	for {
		if p.exited() {
			return fmt.Errorf("exited before it was ready (%v)", p.cmd.ProcessState)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("not ready: %w (last check: %v)", err, lastErr)
		}
		err := probe(ctx, s.Addr(), s.password, p.cmd.Process.Pid)
		if err == nil {
			return nil
		}
		lastErr = err
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done(): // also when the process exits
		case <-timer.C:
		}
		timer.Stop()
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
}

// probe speaks RESP to addr: AUTH (if password is set), PING and INFO server.
// It succeeds when PING answers PONG and the server's process_id is pid, so a
// stranger that happens to listen on the same port is never taken for ours.
func probe(ctx context.Context, addr, password string, pid int) error {
	dialer := net.Dialer{Timeout: 500 * time.Millisecond}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	deadline := time.Now().Add(time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}

	var req bytes.Buffer
	if password != "" {
		writeCommand(&req, "AUTH", password)
	}
	writeCommand(&req, "PING")
	writeCommand(&req, "INFO", "server")
	if _, err := conn.Write(req.Bytes()); err != nil {
		return err
	}

	r := bufio.NewReader(conn)
	if password != "" {
		if _, err := readReply(r); err != nil {
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	pong, err := readReply(r)
	if err != nil {
		return fmt.Errorf("PING: %w", err)
	}
	if pong != "PONG" {
		return fmt.Errorf("PING: unexpected reply %q", pong)
	}
	info, err := readReply(r)
	if err != nil {
		return fmt.Errorf("INFO: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if v != strconv.Itoa(pid) {
				return fmt.Errorf("port %s is served by another process (pid %s, want %d)", addr, v, pid)
			}
			return nil
		}
	}
	return errors.New("INFO server: no process_id")
}

// writeCommand appends args to b as a RESP array of bulk strings.
func writeCommand(b *bytes.Buffer, args ...string) {
	fmt.Fprintf(b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(b, "$%d\r\n%s\r\n", len(a), a)
	}
}

// readReply reads one simple string, error, integer or bulk string reply.
// An error reply is returned as an error.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		if n > 1<<20 {
			return "", fmt.Errorf("bulk reply too long (%d bytes)", n)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("unexpected reply %q", line)
	}
}
