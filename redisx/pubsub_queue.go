package redisx

import "sync"

// msgQueue is the bounded buffer between the connections and the reader:
// when full, the oldest Data message makes room.
type msgQueue struct {
	mu    sync.Mutex
	items []Message
	start int
	size  int
	ready chan struct{} // capacity 1: something was pushed
}

func (q *msgQueue) init(size int) {
	q.size = size
	q.ready = make(chan struct{}, 1)
}

// push queues m and reports whether a message was dropped for it. A
// marker right behind another is not queued: one says it all.
func (q *msgQueue) push(m Message) (dropped bool) {
	q.mu.Lock()
	live := q.items[q.start:]
	switch {
	case m.Kind == Reconnected && len(live) > 0 && live[len(live)-1].Kind == Reconnected:
		q.mu.Unlock()
		return false
	case len(live) >= q.size:
		drop := 0
		for drop < len(live)-1 && live[drop].Kind != Data {
			drop++ // markers are kept while a message can go instead
		}
		copy(live[1:drop+1], live[:drop])
		live[0] = Message{}
		q.start++
		dropped = true
	}
	if q.start > q.size {
		n := copy(q.items, q.items[q.start:])
		clear(q.items[n:])
		q.items, q.start = q.items[:n], 0
	}
	q.items = append(q.items, m)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return dropped
}

// pop takes the oldest message, if any.
func (q *msgQueue) pop() (Message, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.start == len(q.items) {
		q.items, q.start = q.items[:0], 0
		return Message{}, false
	}
	m := q.items[q.start]
	q.items[q.start] = Message{}
	q.start++
	return m, true
}
