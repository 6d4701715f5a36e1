package report

import "github.com/redisx-go/kit/benchmarks/verdict"

// renderSLORates are an SLO result's rates as table cells: the highest
// that held and the lowest that failed, never more exact than the search
// was.
func renderSLORates(s verdict.SLOResult) (held, failed string) {
	held, failed = renderQPS(s.MaxRate), renderQPS(s.FirstFailingRate)
	if !(s.MaxRate > 0) {
		held = "none"
	}
	if !(s.FirstFailingRate > 0) {
		failed = "none tried"
	}
	return held, failed
}

// renderSLOLatency is an SLO result's percentile at its MaxRate, in
// milliseconds; a dash when no rate held.
func renderSLOLatency(s verdict.SLOResult) string {
	if !(s.MaxRate > 0) {
		return "–"
	}
	return renderMs(s.Latency)
}

// renderSLONote is what an SLO result's table row says besides its
// numbers: renderSLOState and the result's Note.
func renderSLONote(s verdict.SLOResult) string { return joinNote(renderSLOState(s), s.Note) }

// renderSLOState says whether an SLO result won, and whether its rate
// was confirmed.
func renderSLOState(s verdict.SLOResult) string {
	var note string
	switch {
	case !(s.MaxRate > 0):
		note = "not even the lowest rate tried"
	case s.Winner:
		note = "winner, " + renderPercent(s.Headroom) + " headroom"
	case s.Confirmed:
		note = "confirmed"
	default:
		note = "not confirmed"
	}
	return note
}

// joinNote joins two parts of a note with "; ", either possibly empty.
func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
