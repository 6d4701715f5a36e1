package redisx

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/strategy"
)

// MessageKind tells what a Message is.
type MessageKind uint8

const (
	// Data is a message published on a channel the subscription follows.
	Data MessageKind = iota
	// Reconnected marks a gap: a connection of the subscription was lost
	// and is subscribed again, on a new connection, to every channel and
	// pattern it had. Messages published while it was down are not
	// received; everything published after the marker is. The marker
	// names no channel: any of the subscription's may have missed
	// messages.
	Reconnected
)

// String returns "data" or "reconnected".
func (k MessageKind) String() string {
	if k == Reconnected {
		return "reconnected"
	}
	return "data"
}

// Message is what a Subscription delivers: a message published on
// Channel — matched by Pattern for a PSubscribe, else Pattern is empty —
// with its Payload (the caller's to keep), or a Reconnected marker.
type Message struct {
	Kind             MessageKind
	Channel, Pattern string
	Payload          []byte
}

// DefaultPubSubBuffer is the number of messages a Subscription holds for a
// slow reader when Options.PubSubBuffer is zero.
const DefaultPubSubBuffer = 1000

// pubsubs is what a Client keeps of its subscriptions: the live ones, so
// that Close ends them, the buffer size and the drop counter of Stats.
type pubsubs struct {
	mu      sync.Mutex
	live    map[*Subscription]struct{}
	closed  bool
	buffer  int // Options.PubSubBuffer; 0: DefaultPubSubBuffer
	dropped atomic.Int64
}

// closeAll closes every subscription, for Client.Close: none can be added
// afterwards.
func (p *pubsubs) closeAll() {
	p.mu.Lock()
	p.closed = true
	subs := make([]*Subscription, 0, len(p.live))
	for s := range p.live {
		subs = append(subs, s)
	}
	p.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
}

// Subscription receives the messages of channels and patterns a Client
// subscribed to, in order per connection, on Messages. It is safe for
// concurrent use. The caller must Close it (Client.Close closes those
// still open).
//
// Connections: a subscription has connections of its own, dialled for it
// and never shared nor pooled — one for its channels and patterns
// (Subscribe, PSubscribe; on a Redis Cluster to any master, since the
// cluster carries every message to every node) and, for sharded channels
// (SSubscribe), one per cluster slot holding some of them, to the master
// of that slot (one for all of them on a standalone server). A connection
// is pinged every second; one that fails or stays silent for 3 s is
// replaced: the subscription dials again, with backoff (20 ms doubling
// to 500 ms) for as long as it is open — within the client's life, never
// a caller's context — subscribes again to everything it had, and then
// delivers a Reconnected marker. It never drops a subscription silently.
// On a cluster a sharded channel's connection follows its slot's master:
// the dial goes to the master of the slot in the client's map, and a
// MOVED reply, the loss of the connection, or the server unsubscribing
// the channels of a slot it no longer serves sends it to the new master.
//
// A slow reader: messages wait in a buffer of Options.PubSubBuffer
// messages (DefaultPubSubBuffer when zero); when it is full the oldest
// message is dropped for each new one, and counted in Dropped and in the
// client's Stats.PubSubDropped. A Reconnected marker is never dropped
// while a message can be.
//
// Refusals: a Subscribe of a channel the server refuses (NOPERM: the ACL
// user may not use it) fails with ErrAuth and changes nothing else. A
// subscription the server refuses to restore on a new connection — a
// channel or pattern it had is refused, the user having lost the
// permission, or the connection itself is (ErrAuth: the password
// changed) — cannot keep its promise, and ends rather than go quiet:
// Messages is closed once the messages received before are read, Err
// says why, and later calls return the same error. Close must still be
// called. A reader that ranges over Messages checks Err after the loop:
//
//	for m := range sub.Messages() {
//		// m.Kind == redisx.Reconnected: messages may have been missed
//	}
//	if err := sub.Err(); err != nil {
//		// the server refused to restore the subscription
//	}
type Subscription struct {
	c      *Client
	dialer strategy.SessionDialer
	shards bool // sharded channels are spread by slot: a cluster

	life   context.Context // the subscription's: ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the sessions and the forwarder

	// mu guards sessions, closed and err. It is held while a call changes
	// the names of a session, so that none is ended meanwhile (lock order:
	// mu, then the session's, see session).
	mu       sync.Mutex
	sessions map[int]*session // classicKey, or a slot (0 on a standalone server)
	closed   bool
	err      error         // why the subscription ended by itself (Err)
	ended    chan struct{} // closed when err is set

	q       msgQueue
	out     chan Message
	dropped atomic.Int64
}

// classicKey is the session of channels and patterns.
const classicKey = -1

// Subscribe subscribes to channels and returns once the server has
// confirmed every one of them: a message published on one after
// Subscribe returns is received. See Subscription for the connections,
// reconnections and the buffer. No channels: a subscription with none
// yet. Strategies without strategy.SessionDialer (goredis.Strategy)
// return ErrUnsupported.
func (c *Client) Subscribe(ctx context.Context, channels ...string) (*Subscription, error) {
	return c.subscribe(ctx, kindChannel, channels)
}

// PSubscribe is Subscribe for glob-style patterns (PSUBSCRIBE): messages
// carry the Pattern they matched.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) (*Subscription, error) {
	return c.subscribe(ctx, kindPattern, patterns)
}

// SSubscribe is Subscribe for sharded channels (SSUBSCRIBE, Redis 7): on a
// cluster a sharded channel lives on the master of its slot, as a key
// would, and its messages (SPublish) travel no further than its shard.
func (c *Client) SSubscribe(ctx context.Context, channels ...string) (*Subscription, error) {
	return c.subscribe(ctx, kindShard, channels)
}

func (c *Client) subscribe(ctx context.Context, kind subKind, names []string) (*Subscription, error) {
	if err := checkKeys(names); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !c.caps.HasSessions() {
		return nil, fmt.Errorf("%w: Pub/Sub on a %T backend", ErrUnsupported, c.b)
	}
	s := &Subscription{c: c, dialer: &c.caps, shards: len(c.caps.Masters()) > 0, sessions: map[int]*session{}, ended: make(chan struct{}), out: make(chan Message)}
	s.life, s.cancel = context.WithCancel(context.Background())
	size := c.ps.buffer
	if size <= 0 {
		size = DefaultPubSubBuffer
	}
	s.q.init(size)
	c.ps.mu.Lock()
	if c.ps.closed {
		c.ps.mu.Unlock()
		s.cancel()
		return nil, ErrClosed
	}
	if c.ps.live == nil {
		c.ps.live = map[*Subscription]struct{}{}
	}
	c.ps.live[s] = struct{}{}
	c.ps.mu.Unlock()
	s.wg.Add(1)
	go s.forward()
	if len(names) > 0 {
		if err := s.add(ctx, kind, names); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Messages returns the channel the subscription delivers on, the same at
// every call. It is closed by Close, or when the subscription ends by
// itself (see Err). Messages of a channel unsubscribed may still come if
// they were received before Unsubscribe.
func (s *Subscription) Messages() <-chan Message { return s.out }

// Dropped returns the number of messages dropped so far because the
// buffer was full (see Subscription).
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Subscribe adds channels to the subscription and returns once the server
// has confirmed them, or fails when ctx ends or the server refuses them
// (ErrAuth for NOPERM). A failed call undoes what it added: the channels
// it named are unsubscribed again, except those an earlier Subscribe
// added or another one still running is adding.
func (s *Subscription) Subscribe(ctx context.Context, channels ...string) error {
	return s.addChecked(ctx, kindChannel, channels)
}

// PSubscribe adds patterns, as Subscribe adds channels.
func (s *Subscription) PSubscribe(ctx context.Context, patterns ...string) error {
	return s.addChecked(ctx, kindPattern, patterns)
}

// SSubscribe adds sharded channels, as Subscribe adds channels.
func (s *Subscription) SSubscribe(ctx context.Context, channels ...string) error {
	return s.addChecked(ctx, kindShard, channels)
}

// Unsubscribe removes channels from the subscription — every channel when
// none is named — and returns once UNSUBSCRIBE is written (or the
// channels forgotten, while the connection is being replaced): no message
// of them is delivered after it returns, except those already received.
// A Subscribe of them still waiting for the server returns nil: it took
// effect first.
func (s *Subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.remove(ctx, kindChannel, channels)
}

// PUnsubscribe removes patterns, as Unsubscribe removes channels.
func (s *Subscription) PUnsubscribe(ctx context.Context, patterns ...string) error {
	return s.remove(ctx, kindPattern, patterns)
}

// SUnsubscribe removes sharded channels, as Unsubscribe removes channels.
func (s *Subscription) SUnsubscribe(ctx context.Context, channels ...string) error {
	return s.remove(ctx, kindShard, channels)
}

func (s *Subscription) addChecked(ctx context.Context, kind subKind, names []string) error {
	if err := checkKeys(names); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.add(ctx, kind, names)
}

// add subscribes to names, each in its session, and waits for every
// confirmation within ctx. A failure undoes what the call added.
func (s *Subscription) add(ctx context.Context, kind subKind, names []string) error {
	bySession := map[int][]string{}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			key := s.keyOf(kind, n)
			bySession[key] = append(bySession[key], n)
		}
	}
	var parts []part
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	for key, ns := range bySession {
		ss := s.sessions[key]
		fresh := ss == nil
		if fresh {
			ss = s.newSession(key)
			s.sessions[key] = ss
		}
		parts = append(parts, part{key, ss, ss.add(kind, ns)})
		if fresh {
			ss.start()
		}
	}
	s.mu.Unlock()
	var err error
	for _, p := range parts {
		select {
		case err = <-p.cl.done:
		case <-ctx.Done():
			err = ctx.Err()
		case <-s.ended:
			return s.Err()
		case <-s.life.Done():
			return ErrClosed
		}
		if err != nil {
			break
		}
	}
	s.release(parts, err == nil)
	return err
}

// part is a call of add in one session.
type part struct {
	key int
	ss  *session
	cl  *call
}

// release ends the calls of parts (see session.release), and the
// sessions left with nothing.
func (s *Subscription) release(parts []part, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		if s.sessions[p.key] != p.ss {
			continue // ended since
		}
		if p.ss.release(p.cl, ok) {
			delete(s.sessions, p.key)
			p.ss.cancel()
		}
	}
}

// usableLocked returns the error of a call on a subscription closed or
// ended. The caller holds s.mu.
func (s *Subscription) usableLocked() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.err != nil:
		return s.err
	}
	return nil
}

// end ends the subscription with err (see Err): its sessions stop, the
// calls waiting return err, and Messages is closed once the messages
// received before are read.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.err != nil {
		return
	}
	s.err = &endedError{err}
	for key, ss := range s.sessions {
		delete(s.sessions, key)
		ss.cancel()
	}
	close(s.ended)
}

// Err returns why the subscription ended by itself — the server refused
// to restore it: an error wrapping ErrAuth (NOPERM, WRONGPASS) or the
// refusal's sentinel, and the server's reply — or nil while it runs, or
// if Close ended it. See Subscription.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// keyOf is the session of a channel or pattern of kind.
func (s *Subscription) keyOf(kind subKind, name string) int {
	switch {
	case kind != kindShard:
		return classicKey
	case s.shards:
		return topology.Slot(name)
	}
	return 0
}

// remove unsubscribes from names (all of kind when none).
func (s *Subscription) remove(ctx context.Context, kind subKind, names []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	for key := range s.sessions {
		if (kind == kindShard) != (key != classicKey) {
			continue
		}
		if len(names) == 0 {
			s.dropLocked(key, kind, nil)
			continue
		}
		var mine []string
		for _, n := range names {
			if s.keyOf(kind, n) == key {
				mine = append(mine, n)
			}
		}
		if len(mine) > 0 {
			s.dropLocked(key, kind, mine)
		}
	}
	return nil
}

// dropLocked unsubscribes the session of key from names (all of kind
// when nil), and ends the session when it is left with nothing. The
// caller holds s.mu.
func (s *Subscription) dropLocked(key int, kind subKind, names []string) {
	ss := s.sessions[key]
	if ss == nil {
		return
	}
	if ss.remove(kind, names) {
		delete(s.sessions, key)
		ss.cancel()
	}
}

// Close ends the subscription: its connections are closed, its goroutines
// return before Close does, and Messages is closed (messages still
// buffered are dropped, not counted). It is idempotent; later calls of
// the subscription return ErrClosed.
func (s *Subscription) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait() // the forwarder has closed Messages
	s.c.ps.mu.Lock()
	delete(s.c.ps.live, s)
	s.c.ps.mu.Unlock()
	return nil
}

// deliver queues m for the reader.
func (s *Subscription) deliver(m Message) {
	if s.q.push(m) {
		s.dropped.Add(1)
		s.c.ps.dropped.Add(1)
	}
}

// forward hands the queued messages to the reader, one at a time, until
// Close, or until the queue is empty once the subscription ended; then
// it closes Messages.
func (s *Subscription) forward() {
	defer s.wg.Done()
	defer close(s.out)
	for {
		m, ok := s.q.pop()
		if !ok {
			select {
			case <-s.q.ready:
				continue
			case <-s.ended:
				if m, ok = s.q.pop(); !ok {
					return
				}
			case <-s.life.Done():
				return
			}
		}
		select {
		case s.out <- m:
		case <-s.life.Done():
			return
		}
	}
}

// Publish posts message on channel (PUBLISH) and returns the number of
// subscribers that received it — on a Redis Cluster, those of the node
// it was sent to. It is an ordinary command: Do's rules (retries
// included) apply.
func (c *Client) Publish(ctx context.Context, channel string, message []byte) (int64, error) {
	return redis.Int64(c.Do(ctx, "PUBLISH", channel, message))
}

// SPublish posts message on the sharded channel (SPUBLISH, Redis 7): on a
// cluster it goes to the master of the channel's slot, and reaches the
// SSubscribe subscribers of that shard.
func (c *Client) SPublish(ctx context.Context, channel string, message []byte) (int64, error) {
	return redis.Int64(c.Do(ctx, "SPUBLISH", channel, message))
}
