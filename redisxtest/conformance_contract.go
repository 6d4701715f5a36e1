package redisxtest

import (
	"testing"

	"github.com/redisx-go/kit/strategy/strategytest"
	"go.uber.org/goleak"
)

// contract runs the Backend contract's own cases (strategytest's
// ContractCases) through the facade, as Contract/… subtests.
func (s *suite) contract(t *testing.T) {
	for _, c := range strategytest.ContractCases() {
		t.Run("Contract/"+c.Name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			cl := s.client(t)
			c.Run(t, strategytest.Fixture{
				Backend: cl,
				Key:     func(name string) string { return s.key(t, name) },
				Close: func() {
					if err := cl.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
					if err := goleak.Find(before, goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper")); err != nil {
						t.Errorf("goroutines left after Close: %v", err)
					}
				},
			})
		})
	}
}
