package strategy_test

import (
	"context"
	"fmt"
	"log"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// SCAN has a cursor per master, so a cluster backend's Do refuses it;
// NodeDoer runs it on each master in turn. On a standalone server, where
// there is no NodeDoer, Do runs it on the one server.
func ExampleNodeDoer() {
	ctx := context.Background()
	cl, err := redisxtest.NewCluster(ctx, redisxtest.ClusterOptions{}) // 3 masters
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	b, err := strategy.Multiplexed{}.Open(ctx, strategy.Config{Addrs: cl.Addrs()[:1]}) // one seed is enough
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	for i := range 20 { // sessions on every master, and a key of another kind
		if err := b.Set(ctx, fmt.Sprintf("session:%d", i), []byte("…"), 0); err != nil {
			log.Fatal(err)
		}
	}
	if err := b.Set(ctx, "config", []byte("…"), 0); err != nil {
		log.Fatal(err)
	}

	nd, ok := b.(strategy.NodeDoer)
	if !ok {
		log.Fatal("not a cluster")
	}
	var keys []string
	for _, addr := range nd.Masters() {
		for cursor := "0"; ; {
			page, err := redigo.Values(nd.DoOn(ctx, addr, "SCAN", cursor, "MATCH", "session:*", "COUNT", 100))
			if err != nil {
				log.Fatal(err)
			}
			cursor, _ = redigo.String(page[0], nil)
			found, _ := redigo.Strings(page[1], nil)
			keys = append(keys, found...)
			if cursor == "0" {
				break
			}
		}
	}
	fmt.Println(len(keys), "sessions")
	// Output: 20 sessions
}
