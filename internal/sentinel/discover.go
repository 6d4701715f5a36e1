// Package sentinel runs a transport's node over the master that Redis
// Sentinel names. It asks the sentinels for the master, watches them for
// failovers (+switch-master) and moves every call to the new master when
// one happens. strategy opens it for Multiplexed and Pool when
// Config.Sentinel is set.
package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
)

// defaultAskTimeout bounds one question to one sentinel when the
// configuration has no DialTimeout.
const defaultAskTimeout = 5 * time.Second

// sentinelConfig returns the settings of a connection to a sentinel: the
// sentinels' own credentials, the data nodes' TLS and DialTimeout, and no
// database, client name nor master check (a sentinel knows none of them).
func sentinelConfig(cfg *backend.Config) backend.Config {
	return backend.Config{
		Username:    cfg.Sentinel.Username,
		Password:    cfg.Sentinel.Password,
		TLS:         cfg.TLS,
		DialTimeout: askTimeout(cfg),
	}
}

// askTimeout is the deadline of one question to one sentinel, dial
// included: DialTimeout, or 5 s without one.
func askTimeout(cfg *backend.Config) time.Duration {
	if cfg.DialTimeout > 0 {
		return cfg.DialTimeout
	}
	return defaultAskTimeout
}

// Validate checks cfg.Sentinel.
func Validate(s *backend.SentinelConfig) error {
	switch {
	case s.Master == "":
		return fmt.Errorf("%w: Sentinel.Master is empty", backend.ErrInvalidArgument)
	case len(s.Addrs) == 0:
		return fmt.Errorf("%w: Sentinel.Addrs is empty", backend.ErrInvalidArgument)
	case s.Password == "" && s.Username != "":
		return fmt.Errorf("%w: Sentinel.Username without Sentinel.Password", backend.ErrInvalidArgument)
	}
	for _, a := range s.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: sentinel address %q is not host:port", backend.ErrInvalidArgument, a)
		}
	}
	return nil
}

// answer is one sentinel's view of the master.
type answer struct {
	sentinel string // the sentinel's address, for errors
	addr     string // the master's address it names
	epoch    int64  // its configuration epoch of the master
	err      error
}

// ask asks the sentinel at addr for the master of cfg.Sentinel, within
// askTimeout: its address, by SENTINEL GET-MASTER-ADDR-BY-NAME (which
// already names the replica being promoted when this sentinel leads a
// failover that has reached that point), and its configuration epoch, by
// SENTINEL MASTER.
func ask(ctx context.Context, cfg *backend.Config, addr string) answer {
	a := answer{sentinel: addr}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, askTimeout(cfg))
	defer cancel()
	scfg := sentinelConfig(cfg)
	// Dialled under the caller's context: its DialTimeout is askTimeout,
	// and the error says which of the two ended it.
	nc, err := dial.Dial(caller, &scfg, addr)
	if err != nil {
		a.err = err
		return a
	}
	c := redis.NewConn(nc, 0, 0)
	defer c.Close()
	// The end of ctx (a cancel, not only its deadline) closes the
	// connection, so that a read in progress returns.
	defer context.AfterFunc(ctx, func() { c.Close() })()
	deadline, _ := ctx.Deadline()
	hp, err := redis.Strings(redis.DoWithTimeout(c, remaining(deadline), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", cfg.Sentinel.Master))
	switch {
	case errors.Is(err, redis.ErrNil):
		a.err = fmt.Errorf("%w: sentinel %s monitors no master named %q", backend.ErrConnection, addr, cfg.Sentinel.Master)
		return a
	case err == nil && len(hp) != 2:
		err = fmt.Errorf("GET-MASTER-ADDR-BY-NAME: %d fields, want 2", len(hp))
	}
	if err != nil {
		if caller.Err() != nil {
			// The caller's end closed the connection under the question.
			err = failure.DialEnded(addr, caller.Err())
		} else {
			err = failure.ConnError(addr, err)
		}
		a.err = err
		return a
	}
	a.addr = net.JoinHostPort(hp[0], hp[1])
	if m, err := redis.StringMap(redis.DoWithTimeout(c, remaining(deadline), "SENTINEL", "MASTER", cfg.Sentinel.Master)); err == nil {
		a.epoch, _ = strconv.ParseInt(m["config-epoch"], 10, 64)
	}
	return a
}

// Discover returns the address of the master: every sentinel is asked at
// once, each within its own deadline (go-redis#3652: a sentinel that does
// not answer must not stop the others from being heard), and the
// addresses they name are tried from the newest configuration epoch down
// — not the first answer (Lettuce#661: a sentinel cut off from the others
// may still name a master that was failed over) — until one is reached
// and reports itself a master (ROLE, by a dial of cfg, which has Sentinel
// set). Its errors wrap ErrConnection, but for a master that refuses the
// credentials or a setting (ErrAuth, ErrInvalidArgument: its error
// alone), and for sentinels that all refuse their credentials (the
// first's error).
func Discover(ctx context.Context, cfg *backend.Config) (string, error) {
	answers := make([]answer, len(cfg.Sentinel.Addrs))
	var wg sync.WaitGroup
	for i, addr := range cfg.Sentinel.Addrs {
		wg.Go(func() { answers[i] = ask(ctx, cfg, addr) })
	}
	wg.Wait()
	var errs []error
	var named []answer
	for _, a := range answers {
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		named = append(named, a)
	}
	// Newest epoch first; among equals, the order of cfg.Sentinel.Addrs.
	slices.SortStableFunc(named, func(a, b answer) int {
		switch {
		case a.epoch > b.epoch:
			return -1
		case a.epoch < b.epoch:
			return 1
		}
		return 0
	})
	tried := map[string]bool{}
	for _, a := range named {
		if tried[a.addr] {
			continue
		}
		tried[a.addr] = true
		err := verify(ctx, cfg, a.addr)
		if refused(err) {
			// The master refuses the credentials or a setting (the DB):
			// so would the next master named.
			return "", err
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("master %s named by sentinel %s: %w", a.addr, a.sentinel, err))
			continue
		}
		return a.addr, nil
	}
	if len(named) == 0 && len(errs) > 0 && !slices.ContainsFunc(errs, func(err error) bool { return !refused(err) }) {
		return "", errs[0] // every sentinel refused the credentials
	}
	return "", fmt.Errorf("%w: no sentinel named a master of %q that could be reached: %w",
		backend.ErrConnection, cfg.Sentinel.Master, errors.Join(errs...))
}

// refused reports whether err is a server's refusal of the
// configuration (ErrInvalidArgument) or of the credentials (ErrAuth),
// which another attempt would meet again.
func refused(err error) bool {
	return errors.Is(err, backend.ErrInvalidArgument) || errors.Is(err, backend.ErrAuth)
}

// remaining is the time left until deadline, at least a millisecond: a
// redigo timeout of zero or less would mean none.
func remaining(deadline time.Time) time.Duration {
	return max(time.Until(deadline), time.Millisecond)
}

// verify dials addr with cfg, whose Sentinel makes the dial check that
// the server is a master, and closes the connection.
func verify(ctx context.Context, cfg *backend.Config, addr string) error {
	nc, err := dial.Dial(ctx, cfg, addr)
	if err != nil {
		return err
	}
	return nc.Close()
}
