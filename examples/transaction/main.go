// Command transaction moves money between accounts with optimistic
// transactions (WATCH … MULTI … EXEC through redisx.Client.Watch). Twenty
// goroutines make random transfers at once, each transfer read, checked and
// written only if no other one touched its accounts in between, tried again
// when one did. The total stays what it was, and no account goes below
// zero.
//
//	go run ./examples/transaction                      # its own redis-server
//	go run ./examples/transaction -addr 127.0.0.1:6379 # yours (keys under example:tx:)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

// The accounts share a {hash tag}, so that a transaction on two of them
// runs on one Redis Cluster node too.
var accounts = []string{"example:tx:{bank}:ada", "example:tx:{bank}:bob", "example:tx:{bank}:eve"}

func main() {
	addr := flag.String("addr", "", "Redis server `host:port`; empty: start a redis-server on a free loopback port")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if addr == "" {
		srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		addr = srv.Addr()
		fmt.Println("started redis-server on", addr)
	}
	c, err := redisx.New(ctx, redisx.Options{Addrs: []string{addr}})
	if err != nil {
		return err
	}
	defer c.Close()
	for _, a := range accounts {
		if err := c.Set(ctx, a, []byte("100"), 0); err != nil {
			return err
		}
	}

	var conflicts, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 50 {
				from, to := rng.IntN(len(accounts)), rng.IntN(len(accounts)-1)
				if to >= from {
					to++
				}
				n, err := transfer(ctx, c, accounts[from], accounts[to], 1+rng.IntN(30))
				conflicts.Add(int64(n))
				switch {
				case errors.Is(err, errInsufficient):
					refused.Add(1)
				case err != nil:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	total := 0
	for _, a := range accounts {
		n, err := redis.Int(c.Do(ctx, "GET", a))
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d\n", a, n)
		total += n
	}
	fmt.Printf("total %d (was %d); %d transfers refused for want of funds, %d conflicts retried\n",
		total, 100*len(accounts), refused.Load(), conflicts.Load())
	return nil
}

var errInsufficient = errors.New("insufficient funds")

// transfer moves amount from one account to another in a transaction,
// trying again while another transfer wrote either account meanwhile. It
// returns the number of conflicts met.
func transfer(ctx context.Context, c *redisx.Client, from, to string, amount int) (conflicts int, err error) {
	for {
		err = c.Watch(ctx, func(tx *redisx.Tx) error {
			balance, err := redis.Int(tx.Do(ctx, "GET", from))
			if err != nil {
				return err
			}
			if balance < amount {
				return errInsufficient // Watch gives the connection back clean
			}
			_, err = tx.Exec(ctx,
				[]any{"DECRBY", from, amount},
				[]any{"INCRBY", to, amount},
			)
			return err
		}, from, to)
		if !errors.Is(err, redisx.ErrTxConflict) {
			return conflicts, err
		}
		conflicts++
	}
}
