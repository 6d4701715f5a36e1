package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

// DoMulti sends a batch in one round trip; each command's error is its
// own.
func ExampleClient_DoMulti() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := redisx.New(ctx, srv.Options())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	res := c.DoMulti(ctx,
		[]any{"SET", "user:1:name", "ada"},
		[]any{"INCR", "user:1:visits"},
		[]any{"LPUSH", "user:1:name", "x"}, // a string, not a list: WRONGTYPE
		[]any{"GET", "user:1:name"},
	)
	for _, r := range res {
		var re redis.Error
		if errors.As(r.Err, &re) {
			fmt.Println("error reply:", re[:9])
			continue
		}
		if r.Err != nil {
			log.Fatal(r.Err) // the connection or the context failed
		}
		switch v := r.Value.(type) {
		case []byte:
			fmt.Println(string(v)) // a bulk string
		default:
			fmt.Println(v) // a status ("OK"), an integer…
		}
	}
	// Output:
	// OK
	// 1
	// error reply: WRONGTYPE
	// ada
}
