package redisx_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/redisx-go/kit/redisx"
)

// fuzzPassword is the password FuzzParseURL plants in every input. It has
// no character a URL escapes, so it reads the same decoded or not.
const fuzzPassword = "Pw7qZx9KcanaRY"

// withPassword returns raw with its URL password replaced by pw — or, for
// a URL without user info, with user info "u:pw@" inserted before the
// host. The authority is found as net/url finds it: the fragment cut off,
// the scheme up to the first ':', then "//" and the authority up to the
// first '/' or '?'; the user info is the part before its last '@', and the
// password what follows the first ':' in it, or the whole user info when
// it has no ':' (ParseURL's redis://password@host shorthand). ok is false
// when raw has no authority.
func withPassword(raw, pw string) (string, bool) {
	head, _, _ := strings.Cut(raw, "#")
	i := strings.IndexByte(head, ':')
	if i < 0 || !strings.HasPrefix(head[i:], "://") {
		return "", false
	}
	start := i + len("://")
	end := len(head)
	if j := strings.IndexAny(head[start:], "/?"); j >= 0 {
		end = start + j
	}
	at := strings.LastIndex(raw[start:end], "@")
	if at < 0 {
		return raw[:start] + "u:" + pw + "@" + raw[start:], true
	}
	info := raw[start : start+at]
	from := start
	if user, _, found := strings.Cut(info, ":"); found {
		from += len(user) + 1
	}
	return raw[:from] + pw + raw[start+at:], true
}

// FuzzParseURL checks that ParseURL never panics, that every error wraps
// ErrInvalidArgument under a single "redisx:" prefix, and that no error
// repeats the URL's password: each input is parsed as given, then again
// with a known password planted in its user info.
func FuzzParseURL(f *testing.F) {
	// More seeds are in testdata/fuzz/FuzzParseURL.
	f.Add("redis://user:" + secret + "@cache.internal:6380/2?strategy=pool&size=8")
	f.Fuzz(func(t *testing.T, raw string) {
		check := func(raw string) (redisx.Options, error) {
			o, err := redisx.ParseURL(raw)
			if err != nil {
				if !errors.Is(err, redisx.ErrInvalidArgument) {
					t.Fatalf("ParseURL(%q) error %q does not wrap ErrInvalidArgument", raw, err)
				}
				if msg := err.Error(); !strings.HasPrefix(msg, "redisx: ") ||
					!strings.Contains(raw, "redisx:") && strings.Count(msg, "redisx:") != 1 {
					t.Fatalf("ParseURL(%q) error %q: want one \"redisx: \" prefix", raw, msg)
				}
				return o, err
			}
			if len(o.Addrs) == 0 || o.Strategy == nil || o.DB < 0 {
				t.Fatalf("ParseURL(%q) = %+v, nil; want addresses, a strategy and DB ≥ 0", raw, o)
			}
			for _, a := range o.Addrs {
				if _, _, err := net.SplitHostPort(a); err != nil {
					t.Fatalf("ParseURL(%q) address %q is not host:port: %v", raw, a, err)
				}
			}
			return o, nil
		}
		check(raw)

		if strings.Contains(raw, fuzzPassword) {
			return
		}
		planted, ok := withPassword(raw, fuzzPassword)
		if !ok {
			return
		}
		o, err := check(planted)
		switch {
		case err != nil && strings.Contains(err.Error(), fuzzPassword):
			t.Fatalf("ParseURL(%q) error %q repeats the password", planted, err)
		case err == nil && o.Password != fuzzPassword:
			// The test's idea of where the password is differs from
			// ParseURL's: fix withPassword.
			t.Fatalf("ParseURL(%q) password = %q; want the planted %q", planted, o.Password, fuzzPassword)
		}
	})
}
