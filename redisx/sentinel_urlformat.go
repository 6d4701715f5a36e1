package redisx

import "fmt"

// formatSentinelURL writes o, whose Sentinel is set, as a URL.
func formatSentinelURL(o Options, credentials bool) (string, error) {
	return "", fmt.Errorf("%w: Options.Sentinel has no URL form yet", ErrInvalidArgument)
}
