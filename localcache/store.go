package localcache

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/redisx-go/kit/strategy"
)

// entry is one cached reply. Entries are immutable once stored.
type entry struct {
	val      []byte // the value; nil for a remembered miss
	gen      uint64 // the store generation it was read in
	neg      bool   // a remembered "not found"
	expiry   int64  // when the key expires on the server (Unix ns); 0: never or unknown
	deadline int64  // when the entry stops being served, on the store's clock
	cost     int64  // what it counts against MaxBytes
}

// keyTTL is the key's remaining time to live as the server reported it
// when the entry was read: strategy.NoTTL when it has none.
func (e *entry) keyTTL() time.Duration {
	if e.expiry == 0 {
		return strategy.NoTTL
	}
	return max(time.Duration(e.expiry-time.Now().UnixNano()), 0)
}

// store is the ristretto cache plus what keeps it coherent: the
// generation, bumped by every flush, which voids all earlier entries at
// once; the health flag, false while any invalidation connection is down;
// and the reservations of keys whose reads are in flight.
type store struct {
	c       *ristretto.Cache[string, *entry]
	gen     atomic.Uint64
	healthy atomic.Bool

	mu      sync.Mutex
	pending map[string]*reservation
	closed  bool // set under mu and closeMu; no ristretto write after it
	wasUp   bool // under mu: up was called before (the first is no flush)

	// closeMu keeps close from closing ristretto under an invalidation
	// (held shared around its Del and Wait): ristretto panics on a Del
	// after Close and would block a Wait forever.
	closeMu sync.RWMutex

	ttl      time.Duration
	negTTL   time.Duration
	jitter   float64
	ttlKnown bool // reads report each key's TTL (strategy.TTLGetter)

	// clock is a coarse monotonic clock (ns since start) advanced every
	// clockTick by a ticker: a hit compares an entry's deadline with it
	// instead of reading the system clock, which costs more than the rest
	// of a hit on some machines (ristretto's own TTL check does that, so
	// entries are stored without a ristretto TTL).
	clock     atomic.Int64
	start     time.Time
	stopClock chan struct{}
	clockDone chan struct{}

	hits, misses, invalidations, flushes, evictions, bytes atomic.Int64
}

// clockTick is the resolution of the store's clock; entries are given a
// deadline one tick early so they never outlive their TTL.
const clockTick = time.Millisecond

type reservation struct {
	refs int    // reads in flight for the key
	ver  uint64 // bumped by each invalidation of the key
}

// ticket is what a read carries from reserve to settle.
type ticket struct {
	key      string
	ver, gen uint64
}

// entryOverhead approximates the bytes an entry costs besides its key and
// value (the entry, ristretto's item and map slot).
const entryOverhead = 96

func newStore(maxBytes int64, ttl, negTTL time.Duration, jitter float64) (*store, error) {
	s := &store{pending: map[string]*reservation{}, ttl: ttl, negTTL: negTTL, jitter: jitter,
		start: time.Now(), stopClock: make(chan struct{}), clockDone: make(chan struct{})}
	c, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		// Ristretto's rule of thumb: 10 counters per item; assume items
		// of about 100 bytes.
		NumCounters:        max(maxBytes/100*10, 1000),
		MaxCost:            maxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
		OnEvict:            func(*ristretto.Item[*entry]) { s.evictions.Add(1) },
		OnExit: func(e *entry) {
			if e != nil {
				s.bytes.Add(-e.cost)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	s.c = c
	go s.tick()
	return s, nil
}

func (s *store) tick() {
	defer close(s.clockDone)
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		select {
		case <-s.stopClock:
			return
		case <-t.C:
			s.clock.Store(int64(time.Since(s.start)))
		}
	}
}

// get returns the entry of key if it may be served: the store is healthy
// and the entry belongs to the current generation.
func (s *store) get(key string) (*entry, bool) {
	if s.healthy.Load() {
		if e, ok := s.c.Get(key); ok && e.gen == s.gen.Load() && e.deadline > s.clock.Load() {
			s.hits.Add(1)
			return e, true
		}
	}
	s.misses.Add(1)
	return nil, false
}

// reserve marks key as being read, before the read is sent.
func (s *store) reserve(key string) ticket {
	s.mu.Lock()
	r := s.pending[key]
	if r == nil {
		r = &reservation{}
		s.pending[key] = r
	}
	r.refs++
	t := ticket{key: key, ver: r.ver, gen: s.gen.Load()}
	s.mu.Unlock()
	return t
}

// settle ends the read of t. When found or remembered misses are on, the
// reply is stored — but only if no invalidation of the key and no flush
// happened since reserve, and the store is healthy. The value is copied:
// the caller keeps the one it was handed.
func (s *store) settle(t ticket, val []byte, found bool, keyTTL time.Duration) {
	var e *entry
	ttl := s.ttl
	switch {
	case keyTTL == strategy.UnknownTTL && s.ttlKnown:
		// The key vanished or its TTL could not be read: do not guess.
		s.release(t)
		return
	case keyTTL >= 0 && keyTTL < ttl:
		// Never outlive the key on the server: its expiry reaches us
		// only when the server gets round to deleting it.
		ttl = keyTTL
		if ttl < time.Millisecond {
			s.release(t)
			return
		}
	}
	switch {
	case found:
		e = &entry{val: append(make([]byte, 0, len(val)), val...), gen: t.gen}
		if keyTTL >= 0 {
			e.expiry = time.Now().Add(keyTTL).UnixNano()
		}
	case s.negTTL > 0:
		e = &entry{neg: true, gen: t.gen}
		ttl = min(ttl, s.negTTL)
	}
	if s.jitter > 0 {
		ttl -= time.Duration(rand.Float64() * s.jitter * float64(ttl))
	}
	s.mu.Lock()
	r := s.pending[t.key]
	r.refs--
	if r.refs == 0 {
		delete(s.pending, t.key)
	}
	if e != nil && r.ver == t.ver && t.gen == s.gen.Load() && s.healthy.Load() && !s.closed {
		// Under mu, so that an invalidation racing with this store is
		// ordered after it (its Del then follows this Set in ristretto's
		// buffer) or voids the reservation before it.
		e.deadline = int64(time.Since(s.start) + ttl - clockTick)
		e.cost = int64(len(t.key) + len(e.val) + entryOverhead)
		if s.c.Set(t.key, e, e.cost) {
			s.bytes.Add(e.cost)
		}
	}
	s.mu.Unlock()
}

// release ends the read of t without storing anything.
func (s *store) release(t ticket) {
	s.mu.Lock()
	r := s.pending[t.key]
	r.refs--
	if r.refs == 0 {
		delete(s.pending, t.key)
	}
	s.mu.Unlock()
}

// invalidate drops keys and voids the reservations of reads in flight.
// It returns once ristretto has applied the deletions: its Del removes an
// entry at once, but a store of the key still queued in its buffer (a read
// that settled just before) is applied after that and serves the old value
// until the deletion queued behind it is applied too.
func (s *store) invalidate(keys ...string) {
	s.remove(keys, true)
	s.invalidations.Add(int64(len(keys)))
}

// drop is invalidate without waiting for ristretto's buffer: what a write
// does before it is sent. The wait is left to the invalidation after it.
func (s *store) drop(keys ...string) { s.remove(keys, false) }

func (s *store) remove(keys []string, wait bool) {
	s.mu.Lock()
	for _, k := range keys {
		if r := s.pending[k]; r != nil {
			r.ver++
		}
	}
	s.mu.Unlock()
	s.closeMu.RLock()
	if !s.closed {
		for _, k := range keys {
			s.c.Del(k)
		}
		if wait {
			s.c.Wait()
		}
	}
	s.closeMu.RUnlock()
}

// flush voids every entry and every read in flight, at once, and counts
// it in LocalFlushes.
func (s *store) flush() {
	s.void()
	s.flushes.Add(1)
}

// void is flush without counting it: the half of a flush a command of
// this process does before it is sent (see near.Do), the other half being
// counted when it returns.
func (s *store) void() { s.gen.Add(1) }

// down records that an invalidation connection is lost: invalidations may
// be missed from now on, so nothing is served or stored until up. The
// loss of a healthy store flushes it (and counts); while already down
// there is nothing left to flush.
func (s *store) down() {
	if s.healthy.Swap(false) {
		s.flush()
	}
}

// up records that every invalidation connection is subscribed. The flush
// comes before the store is healthy again, under mu so that no settle
// falls between the two: a read reserved until then — while down, or
// before the subscription was confirmed — carries an older generation and
// can never store its reply, let alone serve it; a read reserved after
// the flush was sent after the subscription, so a later write's
// invalidation reaches its reservation or its entry. The first up (at
// Open) is not counted: the cache was empty.
func (s *store) up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.healthy.Load() {
		return
	}
	if s.wasUp {
		s.flush()
	} else {
		s.void()
		s.wasUp = true
	}
	s.healthy.Store(true)
}

// stopServing makes the store serve and store nothing from now on, as
// down does, without counting a flush: what Close does before it closes
// the invalidation connections.
func (s *store) stopServing() { s.healthy.Store(false) }

// close closes ristretto once no invalidation is using it; calls still in
// flight then store and delete nothing.
func (s *store) close() {
	s.mu.Lock()
	s.closeMu.Lock()
	s.closed = true
	s.closeMu.Unlock()
	s.mu.Unlock()
	s.c.Close()
	close(s.stopClock)
	<-s.clockDone
}
