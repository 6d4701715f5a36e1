package strategy_test

import (
	"context"
	"fmt"
	"log"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/strategy"
)

// SCAN has a cursor per master, so a cluster backend's Do refuses it;
// NodeDoer runs it on each master in turn. On a standalone server, where
// there is no NodeDoer, Do runs it on the one server.
func ExampleNodeDoer() {
	ctx := context.Background()
	b, err := strategy.Multiplexed{}.Open(ctx, strategy.Config{Addrs: []string{"127.0.0.1:7000"}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
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
}
