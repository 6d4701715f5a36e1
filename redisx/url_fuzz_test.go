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

// plantedLetters replace the letters and digits of a user info in
// withPlantedUserInfo: no two of them in a row, cyclically, are in any
// error's fixed text.
const plantedLetters = "QzJxWqVkZjXh"

// withPlantedUserInfo returns raw with every letter and digit of what may
// be its user info replaced from plantedLetters (but the two hex digits
// of a %XX escape), and the part it replaced. The user info that may be
// is the widest a writer could have meant: from after "://" (after the
// first ':' without one) to the last '@' of raw, wherever that is — a
// password with an unescaped '/', '?' or '#' reaches past the authority
// as net/url finds it. ok is false when raw has no '@'.
func withPlantedUserInfo(raw string) (planted string, start, end int, ok bool) {
	end = strings.LastIndexByte(raw, '@')
	if end < 0 {
		return "", 0, 0, false
	}
	if i := strings.Index(raw, "://"); i >= 0 && i+3 <= end {
		start = i + 3
	} else if i := strings.IndexByte(raw, ':'); i >= 0 && i < end {
		start = i + 1
	}
	b := []byte(raw)
	n := 0
	for i := start; i < end; i++ {
		c := b[i]
		if c == '%' {
			i += 2 // keep an escape's hex digits
			continue
		}
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b[i] = plantedLetters[n%len(plantedLetters)]
			n++
		}
	}
	return string(b), start, end, true
}

// quotesUserInfo returns a run of three characters of planted[start:end],
// at least two of them planted (one could be the 'x' of "redisx: "), that
// msg repeats, and which occurs in no other part of planted (a host
// spelled like the password may be named).
func quotesUserInfo(msg, planted string, start, end int) (string, bool) {
	for i := start; i+3 <= end; i++ {
		w := planted[i : i+3]
		n := 0
		for _, c := range w {
			if strings.ContainsRune(plantedLetters, c) {
				n++
			}
		}
		if n < 2 || !strings.Contains(msg, w) {
			continue
		}
		if !strings.Contains(planted[:start], w) && !strings.Contains(planted[end:], w) {
			return w, true
		}
	}
	return "", false
}

// FuzzParseURL checks that ParseURL never panics, that every error wraps
// ErrInvalidArgument under a single "redisx:" prefix, and that no error
// repeats the URL's password: each input is parsed as given, then again
// with a known password planted in its user info, and again with every
// letter and digit of what may be its user info replaced, however
// malformed: no error repeats three characters of it in a row.
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
			addrs := o.Addrs
			if o.Sentinel != nil {
				addrs = o.Sentinel.Addrs // the sentinels name the data nodes
			}
			if len(addrs) == 0 || o.Strategy == nil || o.DB < 0 {
				t.Fatalf("ParseURL(%q) = %+v, nil; want addresses, a strategy and DB ≥ 0", raw, o)
			}
			for _, a := range addrs {
				if _, _, err := net.SplitHostPort(a); err != nil {
					t.Fatalf("ParseURL(%q) address %q is not host:port: %v", raw, a, err)
				}
			}
			return o, nil
		}
		check(raw)

		if planted, start, end, ok := withPlantedUserInfo(raw); ok {
			if _, err := check(planted); err != nil {
				if w, quoted := quotesUserInfo(err.Error(), planted, start, end); quoted {
					t.Fatalf("ParseURL(%q) error %q quotes %q of the user info %q", planted, err, w, planted[start:end])
				}
			}
		}

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
