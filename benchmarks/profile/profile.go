package profile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/redisx"
)

// Options bound what Read reads. The zero value is good.
type Options struct {
	// SampleKeys is the most keys sampled with SCAN (zero: 1000).
	SampleKeys int
	// Timeout bounds the sample: SCAN stops when it is spent, with the
	// keys sampled so far (zero: 5 s). The whole profile, connecting
	// included, takes at most twice as long.
	Timeout time.Duration
	// Username and Password authenticate when the URL has no password.
	Username, Password string
}

// Profile is a server's traffic, read by Read.
type Profile struct {
	// Addr is the host:port profiled; Username, Password (whether it has
	// one), DB and TLS how it was reached: the answer's URL for it keeps
	// them, the password as verdict.PasswordPlaceholder.
	Addr     string
	Username string
	Password bool
	DB       int
	TLS      bool
	// RunID is the server's run_id (INFO server): the same on every
	// connection to one server process, whatever its address.
	RunID string
	// Cluster is set when the server is a node of a cluster; Custom.Keys
	// then counts the keys of every master (its own DBSIZE times their
	// number).
	Cluster bool
	// Custom is the workload derived (Source "profile").
	Custom workload.Custom
	// Sampled is the number of keys SCAN sampled.
	Sampled int
	// Notes say what each part of Custom was read from, and what was
	// ignored or assumed.
	Notes []string
}

// profileCommands are the only commands Read sends, past the
// connection's AUTH and SELECT: reads that change nothing, and that do not
// even count as an access to a key (TYPE, PTTL, MEMORY USAGE and OBJECT
// FREQ look keys up without touching their LRU clock or LFU counter; a
// GET or STRLEN would). It sends no CLIENT SETNAME, no CONFIG, nothing
// that writes.
var profileCommands = map[string]bool{
	"INFO": true, "DBSIZE": true, "SCAN": true, "TYPE": true, "PTTL": true,
	"MEMORY USAGE": true, "OBJECT FREQ": true, "CLUSTER INFO": true,
}

// ErrNotReadOnly is returned for a command outside profileCommands: a
// bug, stopped before it reaches the profiled server.
var ErrNotReadOnly = errors.New("benchmarks: not a read-only command of the profile")

// readOnlyConn is a connection that sends only profileCommands.
type readOnlyConn struct{ c redigo.Conn }

func checkReadOnly(cmd string, args []any) error {
	name := strings.ToUpper(cmd)
	if len(args) > 0 && (name == "MEMORY" || name == "OBJECT" || name == "CLUSTER") {
		name += " " + strings.ToUpper(fmt.Sprint(args[0]))
	}
	if !profileCommands[name] {
		return fmt.Errorf("%w: %s", ErrNotReadOnly, name)
	}
	return nil
}

func (r readOnlyConn) do(cmd string, args ...any) (any, error) {
	if err := checkReadOnly(cmd, args); err != nil {
		return nil, err
	}
	return r.c.Do(cmd, args...)
}

func (r readOnlyConn) send(cmd string, args ...any) error {
	if err := checkReadOnly(cmd, args); err != nil {
		return err
	}
	return r.c.Send(cmd, args...)
}

func (r readOnlyConn) info(section string) (map[string]string, error) {
	text, err := redigo.String(r.do("INFO", section))
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// Read reads the traffic of the server at rawURL
// (redis://[user:password@]host:port[/db], rediss:// for TLS) and derives
// a custom workload from it, without writing anything to it:
//
//   - the mix from INFO commandstats: the calls of get and getex (get),
//     set, setex, psetex, setnx and getset (set), del, unlink and getdel
//     (del), mget (mget), mset and msetnx (mset); the other commands are
//     ignored, and a note names the busiest;
//   - the key space from DBSIZE (times the masters of a cluster), scaled
//     down when storing that many keys would pass MaxSeedBytes;
//   - the value sizes from MEMORY USAGE of a SCAN sample of string keys,
//     less what Redis spends on the key beside its value (its allocator's
//     size classes leave each estimate within about 12%), as a few
//     weighted sizes;
//   - the TTL from PTTL of the sample: twice the median time left, when
//     most keys expire (a key's time left is spread over its life);
//   - the key skew from OBJECT FREQ of the sample when the server's
//     maxmemory-policy is an LFU one: a Zipf exponent fitted to the
//     counters (logarithmic, so a rough one); otherwise uniform, and a
//     note says it was assumed.
//
// The batch of mget/mset is not in any statistic: workload.DefaultCustom's
// is kept and a note says so. The connection is plain: no client name,
// nothing but AUTH and SELECT before the reads (profileCommands). Keys
// under workload.KeyPrefix are left out of the sample. The sample stops
// at o.SampleKeys keys, at o.Timeout, or when SCAN has seen every key.
func Read(ctx context.Context, rawURL string, o Options) (*Profile, error) {
	if !strings.Contains(rawURL, "://") {
		rawURL = "redis://" + rawURL
	}
	opts, err := redisx.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: -profile: %w", err)
	}
	if o.SampleKeys <= 0 {
		o.SampleKeys = 1000
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if opts.Password == "" {
		opts.Username, opts.Password = o.Username, o.Password
	}
	p := &Profile{Addr: opts.Addrs[0], Username: opts.Username, Password: opts.Password != "", DB: opts.DB, TLS: opts.TLS != nil}
	ctx, cancel := context.WithTimeout(ctx, 2*o.Timeout)
	defer cancel()
	dialOpts := []redigo.DialOption{
		redigo.DialReadTimeout(o.Timeout),
		redigo.DialWriteTimeout(o.Timeout),
		redigo.DialDatabase(opts.DB),
	}
	if opts.Password != "" {
		dialOpts = append(dialOpts, redigo.DialUsername(opts.Username), redigo.DialPassword(opts.Password))
	}
	if opts.TLS != nil {
		cfg := opts.TLS.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(p.Addr)
		dialOpts = append(dialOpts, redigo.DialUseTLS(true), redigo.DialTLSConfig(cfg))
	}
	c, err := redigo.DialContext(ctx, "tcp", p.Addr, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: -profile: connect to %s: %w", p.Addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() }) // a read past the deadline
	defer stop()
	if err := p.read(readOnlyConn{c}, o); err != nil {
		return nil, fmt.Errorf("benchmarks: -profile %s: %w", p.Addr, err)
	}
	return p, nil
}

// read runs the profile's reads on c and derives p.Custom.
func (p *Profile) read(c readOnlyConn, o Options) error {
	server, err := c.info("server")
	if err != nil {
		return err
	}
	p.RunID = server["run_id"]
	memory, err := c.info("memory")
	if err != nil {
		return err
	}
	stats, err := c.info("commandstats")
	if err != nil {
		return err
	}
	clusterInfo, err := c.info("cluster")
	if err != nil {
		return err
	}
	dbsize, err := redigo.Int64(c.do("DBSIZE"))
	if err != nil {
		return fmt.Errorf("DBSIZE: %w", err)
	}
	masters := int64(1)
	if clusterInfo["cluster_enabled"] == "1" {
		p.Cluster = true
		ci, err := redigo.String(c.do("CLUSTER", "INFO"))
		if err != nil {
			return fmt.Errorf("CLUSTER INFO: %w", err)
		}
		for _, line := range strings.Split(ci, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_size:"); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
					masters = n
				}
			}
		}
	}
	policy := memory["maxmemory_policy"]
	lfu := strings.Contains(policy, "lfu")
	s, err := sampleKeys(c, o, lfu)
	if err != nil {
		return err
	}
	p.Sampled = len(s.keys)
	p.derive(stats, dbsize, masters, policy, memory["mem_allocator"], s)
	return nil
}

// sampledKey is what the profile read of one key.
type sampledKey struct {
	name  string
	kind  string // TYPE
	pttl  int64  // ms; -1: no expiry, -2: gone
	usage int64  // MEMORY USAGE, bytes
	freq  int64  // OBJECT FREQ; -1 when not read
}

// keySample is the SCAN sample of a profile.
type keySample struct {
	keys    []sampledKey
	own     int  // keys under workload.KeyPrefix, left out
	partial bool // stopped by the time limit before SampleKeys
	done    bool // SCAN saw every key
}

// sampleKeys scans up to o.SampleKeys keys (COUNT 100 a call) within
// o.Timeout and reads TYPE, PTTL, MEMORY USAGE (and OBJECT FREQ with lfu)
// of each, one pipeline per SCAN reply.
func sampleKeys(c readOnlyConn, o Options, lfu bool) (keySample, error) {
	var s keySample
	deadline := time.Now().Add(o.Timeout)
	cursor := "0"
	for len(s.keys) < o.SampleKeys {
		if time.Now().After(deadline) {
			s.partial = true
			break
		}
		reply, err := redigo.Values(c.do("SCAN", cursor, "COUNT", 100))
		if err == nil && len(reply) != 2 {
			err = errors.New("unexpected reply")
		}
		if err != nil {
			return s, fmt.Errorf("SCAN: %w", err)
		}
		names, err := redigo.Strings(reply[1], nil)
		if err != nil {
			return s, fmt.Errorf("SCAN: %w", err)
		}
		var batch []string
		for _, k := range names {
			switch {
			case strings.HasPrefix(k, workload.KeyPrefix):
				s.own++
			case len(s.keys)+len(batch) < o.SampleKeys:
				batch = append(batch, k)
			}
		}
		got, err := readKeys(c, batch, lfu)
		if err != nil {
			return s, err
		}
		s.keys = append(s.keys, got...)
		if cursor, err = redigo.String(reply[0], nil); err != nil {
			return s, fmt.Errorf("SCAN: %w", err)
		}
		if cursor == "0" {
			s.done = true
			break
		}
	}
	return s, nil
}

// readKeys reads TYPE, PTTL, MEMORY USAGE and, with lfu, OBJECT FREQ of
// each key in one pipeline. A key gone in between (a nil reply) is left
// out.
func readKeys(c readOnlyConn, keys []string, lfu bool) ([]sampledKey, error) {
	per := 3
	if lfu {
		per = 4
	}
	for _, k := range keys {
		if err := c.send("TYPE", k); err != nil {
			return nil, err
		}
		if err := c.send("PTTL", k); err != nil {
			return nil, err
		}
		if err := c.send("MEMORY", "USAGE", k); err != nil {
			return nil, err
		}
		if lfu {
			if err := c.send("OBJECT", "FREQ", k); err != nil {
				return nil, err
			}
		}
	}
	if err := c.c.Flush(); err != nil {
		return nil, err
	}
	out := make([]sampledKey, 0, len(keys))
	var first error // the first error reply, of a command the server refused
	for _, k := range keys {
		replies := make([]any, per)
		for i := range replies {
			r, err := c.c.Receive()
			var re redigo.Error
			switch {
			case errors.As(err, &re):
				if first == nil && i < 3 {
					first = fmt.Errorf("reading key %d of the sample: %w", len(out)+1, err)
				}
			case err != nil:
				return nil, err
			}
			replies[i] = r
		}
		kind, _ := redigo.String(replies[0], nil)
		pttl, _ := redigo.Int64(replies[1], nil)
		usage, err := redigo.Int64(replies[2], nil)
		if kind == "none" || err != nil {
			continue // expired or deleted since SCAN saw it
		}
		sk := sampledKey{name: k, kind: kind, pttl: pttl, usage: usage, freq: -1}
		if lfu {
			if f, err := redigo.Int64(replies[3], nil); err == nil {
				sk.freq = f
			}
		}
		out = append(out, sk)
	}
	if first != nil && len(out) == 0 {
		return nil, first
	}
	return out, nil
}
