// Package param reads and writes the values of URL parameters for
// strategy.URLParams: counts, durations, fractions and sizes, with the
// messages its errors carry. It also tells which strategy a value given to
// a URL is (Kind).
package param

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/backend"
)

// ParseCount reads a non-negative integer.
func ParseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a non-negative integer")
	}
	return n, nil
}

// ParseDuration reads a Go duration ("500ms").
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration such as 500ms or 3s")
	}
	return d, nil
}

// ParseFraction reads a number in [0, 1).
func ParseFraction(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	// !(f >= 0 && f < 1) also refuses NaN.
	if err != nil || !(f >= 0 && f < 1) {
		return 0, fmt.Errorf("not a fraction in [0, 1) such as 0.1")
	}
	return f, nil
}

// sizeUnit is a unit of a size parameter.
type sizeUnit struct {
	name string
	n    int64
}

// sizeUnits are the units of a size, largest first (formatSize picks the
// largest that divides the size).
func sizeUnits() []sizeUnit {
	return []sizeUnit{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
}

// ParseSize reads bytes, or a number with B, KiB, MiB, GiB or TiB
// ("64MiB"); SI units (MB) are refused as ambiguous.
func ParseSize(s string) (int64, error) {
	digits := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := s[len(digits):]
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || strings.HasPrefix(digits, "+") {
		return 0, fmt.Errorf("not a size such as 64MiB, 512KiB or 1048576")
	}
	if unit == "" {
		return n, nil
	}
	for _, u := range sizeUnits() {
		if strings.EqualFold(unit, u.name) {
			if n > math.MaxInt64/u.n {
				return 0, fmt.Errorf("size overflows int64")
			}
			return n * u.n, nil
		}
	}
	return 0, fmt.Errorf("unit %q, want B, KiB, MiB, GiB or TiB (SI units such as MB are ambiguous)", unit)
}

// FormatSize writes n in the largest unit that divides it ("64MiB").
func FormatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range sizeUnits() {
		if n%u.n == 0 && u.n > 1 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// NilValue returns an error when v is a nil pointer (to a
// strategy.Multiplexed, say), whose value-receiver methods would panic;
// nil otherwise.
func NilValue(v any) error {
	if r := reflect.ValueOf(v); r.Kind() == reflect.Pointer && r.IsNil() {
		return fmt.Errorf("%w: strategy is a nil %T", backend.ErrInvalidArgument, v)
	}
	return nil
}

// Kind returns v as one of known when v is a value of exactly that type
// or a non-nil pointer to one — not a type that embeds it, whose other
// fields a URL would silently drop — and false otherwise.
func Kind[T any](v any, known []T) (T, bool) {
	var zero T
	r := reflect.ValueOf(v)
	if r.Kind() == reflect.Pointer {
		if r.IsNil() {
			return zero, false
		}
		r = r.Elem()
	}
	for _, k := range known {
		if r.IsValid() && r.Type() == reflect.TypeOf(k) {
			return r.Interface().(T), true
		}
	}
	return zero, false
}
