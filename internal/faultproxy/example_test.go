package faultproxy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
)

// A test points its client at the proxy instead of the server, then
// switches faults on and off while the client runs.
func ExampleStart() {
	p, err := faultproxy.Start(context.Background(), "127.0.0.1:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	fmt.Println("client dials", p.Addr())

	p.Delay(faultproxy.Downstream, 200*time.Millisecond) // a slow server
	// … calls with a 50 ms deadline must fail with DeadlineExceeded …
	p.Blackhole(true) // a half-open connection
	// … calls must fail within the read timeout …
	p.Heal()
	// … and succeed again.
}
