package dial

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
)

// Session dials addr with cfg's handshake and runs hello on the new
// connection (the caller's from then on), within ctx: the connection's
// deadline is ctx's during hello, and cleared after.
func Session(ctx context.Context, cfg *backend.Config, addr string, hello func(net.Conn) error) (net.Conn, error) {
	nc, err := Dial(ctx, cfg, addr)
	if err != nil {
		return nil, err
	}
	if err := runHello(ctx, nc, hello); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// runHello runs hello on nc within ctx.
func runHello(ctx context.Context, nc net.Conn, hello func(net.Conn) error) error {
	if d, ok := ctx.Deadline(); ok {
		nc.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	err := hello(nc)
	if !stop() {
		return failure.CtxErr(nc.RemoteAddr().String(), true, ctx.Err())
	}
	if err != nil {
		return err
	}
	nc.SetDeadline(time.Time{})
	return nil
}

// Asking sends ASKING on nc and reads its +OK: the first step of a session
// dialled to the importing node of an ASK redirect.
func Asking(nc net.Conn) error {
	if _, err := nc.Write([]byte("*1\r\n$6\r\nASKING\r\n")); err != nil {
		return err
	}
	// Byte by byte: nothing else is sent until the next command, and no
	// byte of what follows must be taken from the session's own reader.
	var line []byte
	b := make([]byte, 1)
	for len(line) < 512 {
		if _, err := nc.Read(b); err != nil {
			return err
		}
		line = append(line, b[0])
		if b[0] == '\n' {
			break
		}
	}
	s := strings.TrimRight(string(line), "\r\n")
	if s != "+OK" {
		return fmt.Errorf("redisx: asking: %w", redis.Error(strings.TrimPrefix(s, "-")))
	}
	return nil
}
