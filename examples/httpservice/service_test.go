package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// TestServiceUnderConcurrentClients drives the service with 50 concurrent
// HTTP clients per strategy, mixing reads and writes of a few items, and
// checks that every answer is a version of the item asked for that was
// written.
func TestServiceUnderConcurrentClients(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 8}},
		{"near", localcache.Near{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := srv.Options()
			o.Strategy = tc.s
			c, err := redisx.New(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Do(context.Background(), "FLUSHALL"); err != nil {
				t.Fatal(err)
			}
			store := NewStore(5 * time.Millisecond)
			svc := &Service{cache: c, store: store, ttl: time.Minute}
			hs := httptest.NewServer(svc.Handler())
			defer hs.Close()

			const items = 5
			// Each item is written by one writer only, so the latest value
			// of item i is known: "item-i-vN", N growing.
			var mu sync.Mutex
			latest := map[int]int{}
			for i := range items {
				put(t, hs.URL, i, fmt.Sprintf("item-%d-v0", i))
				latest[i] = 0
			}
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			for w := range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range 40 {
						id := (w + n) % items
						if w < items && n%10 == 9 { // writer w owns item w
							mu.Lock()
							latest[w]++
							v := latest[w]
							mu.Unlock()
							if err := tryPut(hs.URL, w, fmt.Sprintf("item-%d-v%d", w, v)); err != nil {
								errs <- err
								return
							}
							continue
						}
						body, code, err := get(hs.URL + fmt.Sprintf("/items/%d", id))
						if err != nil || code != http.StatusOK {
							errs <- fmt.Errorf("GET item %d: %d %q %v", id, code, body, err)
							return
						}
						var got int
						if _, err := fmt.Sscanf(body, fmt.Sprintf("item-%d-v%%d", id), &got); err != nil {
							errs <- fmt.Errorf("GET item %d = %q: another item's value", id, body)
							return
						}
						// Never a version nobody has written yet. (An older
						// one is possible: plain cache-aside lets a slow load
						// store what it read just before a write's Del.)
						mu.Lock()
						ceil := latest[id]
						mu.Unlock()
						if got > ceil {
							errs <- fmt.Errorf("GET item %d = v%d, but only v%d was written", id, got, ceil)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if code := status(t, hs.URL+"/healthz"); code != http.StatusOK {
				t.Errorf("/healthz = %d, want 200", code)
			}
			if body, code, _ := get(hs.URL + "/stats"); code != http.StatusOK || !strings.Contains(body, `"Strategy"`) {
				t.Errorf("/stats = %d %q", code, body)
			}
			if body, code, _ := get(hs.URL + "/items/999"); code != http.StatusNotFound {
				t.Errorf("GET of a missing item = %d %q, want 404", code, body)
			}
			if _, code, _ := get(hs.URL + "/items/x"); code != http.StatusBadRequest {
				t.Errorf("GET /items/x = %d, want 400", code)
			}
		})
	}
}

func get(url string) (string, int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}

func status(t *testing.T, url string) int {
	t.Helper()
	_, code, err := get(url)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func tryPut(base string, id int, v string) error {
	req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/items/%d", base, id), strings.NewReader(v))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("PUT item %d: status %d", id, resp.StatusCode)
	}
	return nil
}

func put(t *testing.T, base string, id int, v string) {
	t.Helper()
	if err := tryPut(base, id, v); err != nil {
		t.Fatal(err)
	}
}
