// Command sentinel shows a client that follows Redis Sentinel through a
// crash of the master. It serves reads and writes through that client,
// crashes the master while it serves, and prints what the client saw: which
// calls failed, for how long, and that the values written before the crash
// read back from the new master.
//
// It starts its own group — a master, 2 replicas and 3 sentinels on free
// loopback ports (redis-server and redis-sentinel must be installed) —
// and stops it on exit:
//
//	go run ./examples/sentinel
//
// Ctrl-C (SIGINT) or SIGTERM closes the client and stops the servers,
// then exits with status 130.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

const workers = 20 // goroutines writing and reading their own counter

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the program at once
	}()
	err := demo(ctx)
	switch {
	case ctx.Err() != nil:
		fmt.Println("interrupted: client closed, servers stopped")
		stop()
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "error:", err)
		stop()
		os.Exit(1)
	}
}

// seen is what the serving goroutines saw.
type seen struct {
	ok, failed   atomic.Int64
	firstFail    atomic.Int64 // UnixNano; 0: none yet
	lastFail     atomic.Int64
	connFailures atomic.Int64 // failures wrapping redisx.ErrConnection
	lastErr      atomic.Pointer[error]
}

func (s *seen) record(err error) {
	if err == nil || errors.Is(err, redisx.ErrNotFound) {
		s.ok.Add(1)
		return
	}
	now := time.Now().UnixNano()
	s.failed.Add(1)
	s.firstFail.CompareAndSwap(0, now)
	s.lastFail.Store(now)
	s.lastErr.Store(&err)
	if errors.Is(err, redisx.ErrConnection) {
		s.connFailures.Add(1)
	}
}

func demo(ctx context.Context) error {
	fmt.Println("starting a master, 2 replicas and 3 sentinels on loopback ports…")
	g, err := redisxtest.NewSentinel(ctx, redisxtest.Options{Replicas: 2, Sentinels: 3})
	if err != nil {
		return err
	}
	defer g.Close()
	first, err := g.Master()
	if err != nil {
		return err
	}
	fmt.Printf("sentinels %v name master %q at %s\n", g.Addrs(), g.MasterName(), first)

	o := g.Options() // Sentinel: the master's name and the sentinels
	o.Strategy = strategy.Multiplexed{}
	c, err := redisx.New(ctx, o)
	if err != nil {
		return err
	}
	defer c.Close()

	var s seen
	var written [workers]atomic.Int64 // the last counter each worker's Set acknowledged
	serve, stopServing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			key := "redisx-example:sentinel:" + strconv.Itoa(i)
			for n := int64(1); serve.Err() == nil; n++ {
				cctx, cancel := context.WithTimeout(serve, time.Second)
				err := c.Set(cctx, key, []byte(strconv.FormatInt(n, 10)), time.Minute)
				if serve.Err() == nil {
					s.record(err)
				}
				if err == nil {
					written[i].Store(n)
				}
				_, err = c.Get(cctx, key)
				cancel()
				if serve.Err() == nil {
					s.record(err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}

	time.Sleep(time.Second)
	before := s.ok.Load()
	fmt.Printf("serving: %d calls succeeded in the first second\n", before)
	crash := time.Now()
	killed, err := g.KillMaster()
	if err != nil {
		stopServing()
		wg.Wait()
		return err
	}
	fmt.Printf("crashed the master %s (SIGKILL)\n", killed)
	promoted, err := g.WaitFailover(ctx, killed)
	if err != nil {
		stopServing()
		wg.Wait()
		return err
	}
	fmt.Printf("the sentinels agree on the new master %s, %v after the crash\n", promoted, time.Since(crash).Round(100*time.Millisecond))
	// Serve a second more on the new master.
	time.Sleep(time.Second)
	stopServing()
	wg.Wait()

	if s.failed.Load() == 0 {
		fmt.Println("no call failed")
	} else {
		from := time.Unix(0, s.firstFail.Load()).Sub(crash)
		to := time.Unix(0, s.lastFail.Load()).Sub(crash)
		fmt.Printf("the client saw %d calls fail, %d of them with ErrConnection, from %v to %v after the crash; the last error: %v\n",
			s.failed.Load(), s.connFailures.Load(), from.Round(time.Millisecond), to.Round(time.Millisecond), *s.lastErr.Load())
		fmt.Printf("every call succeeded again %v after the crash\n", to.Round(time.Millisecond))
	}
	fmt.Printf("%d calls succeeded in all\n", s.ok.Load())

	// Writes acknowledged by the crashed master may not have reached a
	// replica before it died (replication is asynchronous); the others
	// read back from the new master.
	lost := 0
	for i := range workers {
		v, err := c.Get(ctx, "redisx-example:sentinel:"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		if n, _ := strconv.ParseInt(string(v), 10, 64); n != written[i].Load() {
			lost++
		}
	}
	fmt.Printf("%d of %d counters read back as last acknowledged, from the new master\n", workers-lost, workers)

	fmt.Printf("restarting %s: it rejoins as a replica of %s\n", killed, promoted)
	return g.RestartKilled(ctx)
}
