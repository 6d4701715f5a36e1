package strategy

import (
	"context"
	"net"

	"github.com/redisx-go/kit/internal/dial"
)

// Dial opens one connection to addr with the shared settings of cfg —
// TCP, TLS, AUTH (with cfg.Credentials when set), SELECT, CLIENT
// SETNAME — and returns it ready for commands, with no deadline set: for
// a decorator such as localcache.Near that needs connections of its own,
// authenticated as the strategy's are. ctx and cfg.DialTimeout bound it.
// Its errors wrap ErrAuth when the server refuses the credentials,
// ErrConnection otherwise; Unsent reports true for both.
func Dial(ctx context.Context, cfg Config, addr string) (net.Conn, error) {
	c := cfg
	return dial.Dial(ctx, &c, addr)
}
