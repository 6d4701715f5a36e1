package localcache

import (
	"errors"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/strategy"
)

// TestRefusalNamesTheModesThatWork: the error of a refused CLIENT
// TRACKING names TrackNone always, and the other tracking mode when the
// server accepted it (a proxy or service that supports only one of the
// two); NOPERM is ErrAuth, any other refusal ErrUnsupported.
func TestRefusalNamesTheModesThatWork(t *testing.T) {
	for _, tc := range []struct {
		mode    Tracking
		err     error
		otherOK bool
		kind    error
		names   []string
		not     []string
	}{
		{TrackKeys, redis.Error("NOPERM this user has no permissions to run the 'client|tracking' command"), false, strategy.ErrAuth,
			[]string{"localcache.TrackNone", "NOPERM"}, []string{"localcache.TrackBroadcast"}},
		{TrackKeys, redis.Error("ERR REDIRECT is not supported here"), true, strategy.ErrUnsupported,
			[]string{"localcache.TrackBroadcast, which the server accepts", "localcache.TrackNone"}, nil},
		{TrackBroadcast, redis.Error("ERR BCAST is not supported here"), true, strategy.ErrUnsupported,
			[]string{"localcache.TrackKeys, which the server accepts", "localcache.TrackNone"}, nil},
	} {
		err := refusal("127.0.0.1:6379", tc.mode, tc.err, tc.otherOK)
		msg := err.Error()
		if !errors.Is(err, tc.kind) || strings.Count(msg, "redisx:") != 1 {
			t.Errorf("refusal(%v, %v) = %q; want %v, one redisx: prefix", tc.mode, tc.err, msg, tc.kind)
		}
		for _, s := range tc.names {
			if !strings.Contains(msg, s) {
				t.Errorf("refusal(%v, %v) = %q; want it to name %q", tc.mode, tc.err, msg, s)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(msg, s) {
				t.Errorf("refusal(%v, %v) = %q; want no %q", tc.mode, tc.err, msg, s)
			}
		}
	}
}
