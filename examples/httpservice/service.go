package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/redisx-go/kit/redisx"
)

// Store is the source of truth the cache sits in front of: here an
// in-memory map with a deliberate delay, standing for a database.
type Store struct {
	delay time.Duration

	mu    sync.Mutex
	items map[int]string
	reads int64 // loads that reached the store
}

// NewStore returns a store whose reads take delay.
func NewStore(delay time.Duration) *Store {
	return &Store{delay: delay, items: map[int]string{}}
}

// Load reads item id; ok is false when there is none.
func (s *Store) Load(ctx context.Context, id int) (string, bool, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	v, ok := s.items[id]
	return v, ok, nil
}

// Save writes item id.
func (s *Store) Save(id int, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[id] = v
}

// Reads returns how many loads reached the store.
func (s *Store) Reads() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// Service is the HTTP API: cache-aside reads of items through redisx,
// writes to the store followed by an invalidation of the cached copy.
type Service struct {
	cache *redisx.Client
	store *Store
	ttl   time.Duration
}

// errNoItem is what a load returns for an item the store does not have;
// it is not cached (a miss is cheap to ask again here).
var errNoItem = errors.New("no such item")

// Handler returns the service's routes:
//
//	GET /items/{id}   the item, from the cache or loaded from the store
//	PUT /items/{id}   store the request body as the item, drop the cached copy
//	GET /healthz      200 when Redis answers PING, 503 otherwise
//	GET /stats        the client's statistics as JSON
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", s.getItem)
	mux.HandleFunc("PUT /items/{id}", s.putItem)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /stats", s.stats)
	return mux
}

func itemKey(id int) string { return "httpservice:item:" + strconv.Itoa(id) }

func itemID(r *http.Request) (int, error) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 0 {
		return 0, fmt.Errorf("item id %q is not a non-negative integer", r.PathValue("id"))
	}
	return id, nil
}

func (s *Service) getItem(w http.ResponseWriter, r *http.Request) {
	id, err := itemID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The request's context bounds the read; a client that goes away
	// cancels it, and concurrent misses of one item share one load.
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	v, err := s.cache.GetOrLoad(ctx, itemKey(id), s.ttl, func(ctx context.Context) ([]byte, error) {
		v, ok, err := s.store.Load(ctx, id)
		if err == nil && !ok {
			err = errNoItem
		}
		return []byte(v), err
	})
	switch {
	case errors.Is(err, errNoItem):
		http.Error(w, "not found", http.StatusNotFound)
	case err != nil:
		http.Error(w, "cache unavailable", http.StatusServiceUnavailable)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(v)
	}
}

func (s *Service) putItem(w http.ResponseWriter, r *http.Request) {
	id, err := itemID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body := make([]byte, 0, 256)
	buf := make([]byte, 256)
	for {
		n, err := r.Body.Read(buf)
		body = append(body, buf[:n]...)
		if len(body) > 1<<20 {
			http.Error(w, "item over 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		if err != nil {
			break
		}
	}
	s.store.Save(id, string(body))
	// Invalidate after the write: the next read loads the new value.
	if _, err := s.cache.Del(r.Context(), itemKey(id)); err != nil {
		http.Error(w, "saved, but the cached copy could not be dropped", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if err := s.cache.Ping(ctx); err != nil {
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *Service) stats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		redisx.Stats
		StoreReads int64
	}{s.cache.Stats(), s.store.Reads()})
}
