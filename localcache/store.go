package localcache

import (
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/puzpuzpuz/xsync/v4"
	"github.com/redisx-go/kit/strategy"
)

// entry is one cached reply. Entries are immutable once stored.
type entry struct {
	key      string // ristretto hands back only the entry when it lets one go
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

// store is what a hit is served from and what keeps it coherent.
//
// Two structures hold the entries. The index, an xsync.Map (a concurrent
// hash table whose reads write nothing and lock nothing, and, unlike
// sync.Map, hash a string key without going through an interface), is
// what a hit reads and the only thing it reads: an entry is served if and only if it
// is in the index, belongs to the current generation and has not reached
// its deadline. Ristretto holds the same entries and bounds them: it
// decides, on its own goroutine, whether a new entry is admitted and
// which entries are evicted to make room (TinyLFU, cost = bytes), and
// whatever it lets go of leaves the index too (OnExit). Ristretto applies
// a Set asynchronously and may drop or reject it; the index makes a
// stored reply visible at once — to the very next read, from any
// goroutine — and coherence never depends on ristretto's buffer: an
// invalidation removes the key from the index, synchronously, and what
// ristretto still holds of it is never served.
//
// What keeps the index coherent: the generation, bumped by every flush,
// which voids all earlier entries at once; the health flag, false while
// any invalidation connection is down; and the reservations of keys
// whose reads are in flight, striped by key so that misses of different
// keys do not queue on one lock.
type store struct {
	// Read by every hit, written rarely (gen by flushes, healthy by the
	// invalidation connections, clock every clockTick): kept on cache
	// lines of their own, apart from what misses and writes change, so
	// that a hit does not wait for a line another core just wrote.
	_       cacheLinePad
	index   *xsync.Map[string, *entry] // what may be served
	gen     atomic.Uint64
	healthy atomic.Bool
	// clock is a coarse monotonic clock (ns since start) advanced every
	// clockTick by a ticker: a hit compares an entry's deadline with it
	// instead of reading the system clock, which costs more than the rest
	// of a hit on some machines.
	clock atomic.Int64
	_     cacheLinePad

	// counts are hits and misses, striped: one shared counter, written by
	// every hit, would move its cache line between cores on every hit.
	counts [countStripes]countStripe

	c    *ristretto.Cache[string, *entry]
	res  [resStripes]resStripe
	seed maphash.Seed // hashes keys to reservation stripes

	// closeMu keeps close from closing ristretto under a call that uses it
	// (held shared around its Del and Get): ristretto panics on a Del
	// after Close and may on a Get during it. Reader-biased: feed takes
	// it on the hit path, and its readers write no shared cache line.
	closeMu *xsync.RBMutex
	closed  bool // set under closeMu and every reservation stripe's lock
	wasUp   bool // under every reservation stripe's lock: up was called before

	ttl      time.Duration
	negTTL   time.Duration
	jitter   float64
	ttlKnown bool // reads report each key's TTL (strategy.TTLGetter)

	start     time.Time
	stopClock chan struct{}
	clockDone chan struct{}

	invalidations, received, flushes, evictions, bytes atomic.Int64
}

// cacheLinePad keeps what is around it off each other's cache lines (128
// bytes: x86 fetches lines in adjacent pairs).
type cacheLinePad [128]byte

// clockTick is the resolution of the store's clock; entries are given a
// deadline one tick early so they never outlive their TTL.
const clockTick = time.Millisecond

// countStripes is the number of hit and miss counter pairs; a power of
// two well above the number of cores, so that the goroutines running at
// one time rarely share one.
const countStripes = 64

type countStripe struct {
	hits, misses atomic.Int64
	_            [128 - 16]byte
}

// countStripe returns the counters of the calling goroutine. The hint is
// the address of its stack: stable while it runs, different from that of
// every goroutine running at the same time, and free to read — unlike a
// shared round-robin counter, which would be the very cache line this
// avoids. Goroutines that collide only share a counter; the counts stay
// exact.
func (s *store) countStripe() *countStripe {
	var b byte
	sp := uint64(uintptr(unsafe.Pointer(&b))) >> 11 // stacks are 2 KiB apart at least
	return &s.counts[(sp*0x9E3779B97F4A7C15)>>(64-6)]
}

// feedEvery is how often a lookup (hit or miss) is also shown to
// ristretto, whose admission and eviction (TinyLFU) count how often each
// key is read: one in feedEvery on each counter stripe, a uniform sample
// that keeps the keys' relative frequencies at a fraction of the cost (a
// ristretto Get costs more than the rest of a hit).
const feedEvery = 32

// resStripes is the number of reservation stripes, a power of two.
const resStripes = 64

// resStripe holds the reservations of the keys that hash to it, under its
// own lock. The lock also orders, for each of its keys, a read's store
// into the index against invalidations (see settle and remove).
type resStripe struct {
	mu      sync.Mutex
	pending map[string]*reservation
	_       [128 - 16]byte
}

type reservation struct {
	refs int     // reads in flight for the key
	ver  uint64  // bumped by each invalidation of the key
	lead *flight // the read later misses may wait for (see flight), or nil
}

// ticket is what a read carries from reserve to settle.
type ticket struct {
	key      string
	rs       *resStripe
	ver, gen uint64
	f        *flight // the flight this read leads, or nil
}

// entryOverhead approximates the bytes an entry costs besides its key and
// value: the entry itself, its slot in the index, and ristretto's item,
// map slot and policy record.
const entryOverhead = 200

func newStore(maxBytes int64, ttl, negTTL time.Duration, jitter float64) (*store, error) {
	s := &store{index: xsync.NewMap[string, *entry](), closeMu: xsync.NewRBMutex(), ttl: ttl, negTTL: negTTL, jitter: jitter, seed: maphash.MakeSeed(),
		start: time.Now(), stopClock: make(chan struct{}), clockDone: make(chan struct{})}
	for i := range s.res {
		s.res[i].pending = map[string]*reservation{}
	}
	c, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		// Ristretto's rule of thumb: 10 counters per item the cache holds
		// when full, at most maxBytes/entryOverhead items. (More would
		// only cost memory, and time: Close clears every counter.)
		NumCounters:        max(maxBytes/entryOverhead*10, 1000),
		MaxCost:            maxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
		OnEvict:            func(*ristretto.Item[*entry]) { s.evictions.Add(1) },
		// Every way an entry leaves ristretto — evicted, rejected by its
		// admission, replaced, deleted, cleared by Close — ends here, and
		// takes it out of the index unless a newer entry replaced it there.
		OnExit: func(e *entry) {
			if e != nil {
				s.unindex(e)
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

// get returns the entry of key if it may be served: the store is healthy,
// and the index holds an entry of the current generation before its
// deadline. It writes nothing shared but the caller's counter stripe.
func (s *store) get(key string) (*entry, bool) {
	cs := s.countStripe()
	if s.healthy.Load() {
		if e, ok := s.index.Load(key); ok {
			if e.gen == s.gen.Load() && e.deadline > s.clock.Load() {
				if cs.hits.Add(1)%feedEvery == 0 {
					s.feed(key)
				}
				return e, true
			}
		}
	}
	if cs.misses.Add(1)%feedEvery == 0 {
		s.feed(key)
	}
	return nil, false
}

// feed shows a lookup of key to ristretto's admission policy; the value
// its Get returns is never served (the index is).
func (s *store) feed(key string) {
	tk := s.closeMu.RLock()
	if !s.closed {
		s.c.Get(key)
	}
	s.closeMu.RUnlock(tk)
}

// hits and misses sum the counter stripes.
func (s *store) hits() (n int64) {
	for i := range s.counts {
		n += s.counts[i].hits.Load()
	}
	return n
}

func (s *store) misses() (n int64) {
	for i := range s.counts {
		n += s.counts[i].misses.Load()
	}
	return n
}

func (s *store) stripe(key string) *resStripe {
	return &s.res[maphash.String(s.seed, key)&(resStripes-1)]
}

// reserve marks key as being read, before the read is sent.
func (s *store) reserve(key string) ticket {
	rs := s.stripe(key)
	rs.mu.Lock()
	r := rs.pending[key]
	if r == nil {
		r = &reservation{}
		rs.pending[key] = r
	}
	r.refs++
	t := ticket{key: key, rs: rs, ver: r.ver, gen: s.gen.Load()}
	rs.mu.Unlock()
	return t
}

// reserveOrJoin is reserve for a read that others may wait for: when the
// key's flight may still store its reply (no invalidation of the key and
// no flush since it was reserved, and the store healthy), it returns that
// flight to wait for and no ticket; otherwise a ticket that leads a new
// flight, which settle or release ends.
func (s *store) reserveOrJoin(key string) (ticket, *flight) {
	rs := s.stripe(key)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.pending[key]
	if r == nil {
		r = &reservation{}
		rs.pending[key] = r
	}
	gen := s.gen.Load()
	if f := r.lead; f != nil && f.ver == r.ver && f.gen == gen && s.healthy.Load() {
		f.waiters++
		return ticket{}, f
	}
	r.refs++
	f := &flight{done: make(chan struct{}), ver: r.ver, gen: gen}
	r.lead = f
	return ticket{key: key, rs: rs, ver: r.ver, gen: gen, f: f}, nil
}

// settle ends the read of t. When found or remembered misses are on, the
// reply is stored — but only if no invalidation of the key and no flush
// happened since reserve, and the store is healthy. The value is copied:
// the caller keeps the one it was handed. The reply lands t's flight,
// stored or not.
func (s *store) settle(t ticket, val []byte, found bool, keyTTL time.Duration) {
	e := s.entryOf(t, val, found, keyTTL)
	rs := t.rs
	rs.mu.Lock()
	r := rs.unref(t.key)
	if e != nil && r.ver == t.ver && t.gen == s.gen.Load() && s.healthy.Load() && !s.closed {
		// Under the stripe's lock, as remove's deletion from the index is:
		// an invalidation of the key either voided the reservation before
		// this (r.ver) or deletes this entry after it.
		s.put(e)
	}
	if t.f != nil {
		t.f.land(r, true, found, val, keyTTL, e)
	}
	rs.mu.Unlock()
}

// entryOf returns the entry the reply of t is to be stored as, or nil when
// it is not to be stored: a miss when misses are not remembered, a key
// whose TTL is unknown or about to end.
func (s *store) entryOf(t ticket, val []byte, found bool, keyTTL time.Duration) *entry {
	ttl := s.ttl
	switch {
	case keyTTL == strategy.UnknownTTL && s.ttlKnown:
		// The key vanished or its TTL could not be read: do not guess.
		return nil
	case keyTTL >= 0 && keyTTL < ttl:
		// Never outlive the key on the server: its expiry reaches us
		// only when the server gets round to deleting it.
		ttl = keyTTL
		if ttl < time.Millisecond {
			return nil
		}
	}
	var e *entry
	switch {
	case found:
		e = &entry{key: t.key, val: append(make([]byte, 0, len(val)), val...), gen: t.gen}
		if keyTTL >= 0 {
			e.expiry = time.Now().Add(keyTTL).UnixNano()
		}
	case s.negTTL > 0:
		e = &entry{key: t.key, neg: true, gen: t.gen}
		ttl = min(ttl, s.negTTL)
	default:
		return nil
	}
	if s.jitter > 0 {
		ttl -= time.Duration(rand.Float64() * s.jitter * float64(ttl))
	}
	e.deadline = int64(time.Since(s.start) + ttl - clockTick)
	e.cost = int64(len(t.key) + len(e.val) + entryOverhead)
	return e
}

// put makes e visible in the index and hands it to ristretto; under the
// stripe's lock of its key. An entry of the current generation still
// being served is kept instead: no invalidation has come since it was
// stored (that would have deleted it), so it is as good as e, and a
// second new-key Set queued behind the first would be taken by ristretto
// for a rejection (its admission counts the key as present), and take e
// out of the index with it.
func (s *store) put(e *entry) {
	if cur, ok := s.index.Load(e.key); ok && cur.gen == e.gen && cur.deadline > s.clock.Load() {
		return
	}
	s.index.Store(e.key, e)
	if s.c.Set(e.key, e, e.cost) {
		s.bytes.Add(e.cost)
	} else {
		// Dropped (ristretto's buffer is full): unbounded, so not served.
		s.unindex(e)
	}
}

// unindex takes e out of the index unless a newer entry replaced it there.
func (s *store) unindex(e *entry) {
	s.index.Compute(e.key, func(cur *entry, loaded bool) (*entry, xsync.ComputeOp) {
		if loaded && cur == e {
			return nil, xsync.DeleteOp
		}
		return cur, xsync.CancelOp
	})
}

// unref ends one read of key; under rs.mu.
func (rs *resStripe) unref(key string) *reservation {
	r := rs.pending[key]
	r.refs--
	if r.refs == 0 {
		delete(rs.pending, key)
	}
	return r
}

// release ends the read of t without storing anything: the read failed,
// and the waiters of its flight read for themselves.
func (s *store) release(t ticket) {
	t.rs.mu.Lock()
	r := t.rs.unref(t.key)
	if t.f != nil {
		t.f.land(r, false, false, nil, 0, nil)
	}
	t.rs.mu.Unlock()
}

// invalidate drops keys and voids the reservations of reads in flight;
// ristretto is told too, so that it frees their bytes. Nothing waits for
// ristretto's buffer: what it still holds of a key is never served (and
// its Del, applied late, can only take a newer entry out of the index: a
// lost hit, never a stale one).
func (s *store) invalidate(keys ...string) {
	for _, k := range keys {
		rs := s.stripe(k)
		rs.mu.Lock()
		if r := rs.pending[k]; r != nil {
			r.ver++
		}
		s.index.Delete(k)
		rs.mu.Unlock()
	}
	tk := s.closeMu.RLock()
	if !s.closed {
		for _, k := range keys {
			s.c.Del(k)
		}
	}
	s.closeMu.RUnlock(tk)
	s.invalidations.Add(int64(len(keys)))
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

// lockAll takes every reservation stripe's lock: no settle runs while it
// is held.
func (s *store) lockAll() {
	for i := range s.res {
		s.res[i].mu.Lock()
	}
}

func (s *store) unlockAll() {
	for i := range s.res {
		s.res[i].mu.Unlock()
	}
}

// up records that every invalidation connection is subscribed. The flush
// comes before the store is healthy again, under every stripe's lock so
// that no settle falls between the two: a read reserved until then —
// while down, or before the subscription was confirmed — carries an
// older generation and can never store its reply, let alone serve it; a
// read reserved after the flush was sent after the subscription, so a
// later write's invalidation reaches its reservation or its entry. The
// first up (at Open) is not counted: the cache was empty.
func (s *store) up() {
	s.lockAll()
	defer s.unlockAll()
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

// close closes ristretto once no call is using it; calls still in flight
// then store and delete nothing.
func (s *store) close() {
	s.lockAll()
	s.closeMu.Lock()
	s.closed = true
	s.closeMu.Unlock()
	s.unlockAll()
	s.c.Close()
	close(s.stopClock)
	<-s.clockDone
}
