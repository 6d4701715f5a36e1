package strategy

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/internal/param"
)

// URLParams are the query parameters of a redis:// URL, as a
// URLStrategy reads them (FromURL) or writes them (ToURL): Take, String,
// Count, Duration, Fraction and Size read one (each parameter read is
// taken, so that whatever no one took can be refused: Refuse, Left);
// Add, AddDuration, AddCount, AddFraction and AddSize write one, Encode
// returns what was written. Errors wrap ErrInvalidArgument, name the
// parameter and never repeat the URL.
type URLParams struct {
	in    url.Values
	taken map[string]bool
	out   strings.Builder
}

// ReadURLParams returns the parameters of q for reading.
func ReadURLParams(q url.Values) *URLParams {
	return &URLParams{in: q, taken: map[string]bool{}}
}

// WriteURLParams returns empty parameters for writing.
func WriteURLParams() *URLParams { return &URLParams{} }

// Has reports whether the URL has the parameter name.
func (p *URLParams) Has(name string) bool {
	_, ok := p.in[name]
	return ok
}

// Take returns the value of name, "" when absent, and takes it. A
// parameter given twice is an error unless many.
func (p *URLParams) Take(name string, many bool) ([]string, error) {
	vs, ok := p.in[name]
	if !ok {
		return nil, nil
	}
	p.taken[name] = true
	if len(vs) > 1 && !many {
		return nil, fmt.Errorf("%w: %s= given %d times in URL", ErrInvalidArgument, name, len(vs))
	}
	return vs, nil
}

// String takes name as a string.
func (p *URLParams) String(name string) (string, error) {
	vs, err := p.Take(name, false)
	if err != nil || vs == nil {
		return "", err
	}
	return vs[0], nil
}

// take reads name with parse into dst, which it leaves alone when the
// parameter is absent.
func take[T any](p *URLParams, name string, dst *T, parse func(string) (T, error)) error {
	v, err := p.String(name)
	if err != nil || !p.Has(name) {
		return err
	}
	x, err := parse(v)
	if err != nil {
		return fmt.Errorf("%w: %s=%q in URL: %v", ErrInvalidArgument, name, v, err)
	}
	*dst = x
	return nil
}

// Count takes name, a non-negative integer, into dst.
func (p *URLParams) Count(name string, dst *int) error { return take(p, name, dst, param.ParseCount) }

// Duration takes name, a Go duration ("500ms"), into dst.
func (p *URLParams) Duration(name string, dst *time.Duration) error {
	return take(p, name, dst, param.ParseDuration)
}

// Fraction takes name, a number in [0, 1), into dst.
func (p *URLParams) Fraction(name string, dst *float64) error {
	return take(p, name, dst, param.ParseFraction)
}

// Size takes name, bytes or a number with B, KiB, MiB, GiB or TiB
// ("64MiB"), into dst. A size in SI units (KB, MB) is refused rather than
// guessed at: some read "MB" as 10⁶ bytes, redis.conf reads "mb" as 2²⁰.
func (p *URLParams) Size(name string, dst *int64) error { return take(p, name, dst, param.ParseSize) }

// Refuse returns an error for the first of keys present and not taken:
// a parameter of the strategy owner ("strategy=multiplexed") in a URL
// whose strategy is here ("pool").
func (p *URLParams) Refuse(keys []string, owner, here string) error {
	for _, k := range keys {
		if p.Has(k) && !p.taken[k] {
			return fmt.Errorf("%w: %s= in URL applies to %s, not %s", ErrInvalidArgument, k, owner, here)
		}
	}
	return nil
}

// Left returns the parameters no one took, sorted.
func (p *URLParams) Left() []string {
	var left []string
	for k := range p.in {
		if !p.taken[k] {
			left = append(left, k)
		}
	}
	slices.Sort(left)
	return left
}

// Add writes name=value.
func (p *URLParams) Add(name, value string) {
	if p.out.Len() > 0 {
		p.out.WriteByte('&')
	}
	p.out.WriteString(name)
	p.out.WriteByte('=')
	// ":" and "/" may stand unescaped in a query (RFC 3986, 3.4), and
	// addr=b:7001 reads better than addr=b%3A7001.
	v := url.QueryEscape(value)
	p.out.WriteString(strings.ReplaceAll(strings.ReplaceAll(v, "%3A", ":"), "%2F", "/"))
}

// AddDuration writes name=d unless d is zero.
func (p *URLParams) AddDuration(name string, d time.Duration) {
	if d != 0 {
		p.Add(name, d.String())
	}
}

// AddCount writes name=n unless n is zero; a negative n is an error.
func (p *URLParams) AddCount(name string, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: %s %d is negative", ErrInvalidArgument, name, n)
	}
	if n != 0 {
		p.Add(name, strconv.Itoa(n))
	}
	return nil
}

// AddFraction writes name=f unless f is zero; one outside [0, 1) is an
// error.
func (p *URLParams) AddFraction(name string, f float64) error {
	if !(f >= 0 && f < 1) {
		return fmt.Errorf("%w: %s %v outside [0, 1)", ErrInvalidArgument, name, f)
	}
	if f != 0 {
		p.Add(name, strconv.FormatFloat(f, 'g', -1, 64))
	}
	return nil
}

// AddSize writes name=n in the largest unit that divides it ("64MiB"),
// zero included; a negative n is an error.
func (p *URLParams) AddSize(name string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: %s %d is negative", ErrInvalidArgument, name, n)
	}
	p.Add(name, param.FormatSize(n))
	return nil
}

// Encode returns what was written, as a URL's raw query.
func (p *URLParams) Encode() string { return p.out.String() }
