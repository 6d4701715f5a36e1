package verdict

// The one answer of a run: the configuration for the user's workload at
// the user's concurrency, with its verdict and a URL for the user's own
// server.

// PasswordPlaceholder stands for the password in an Answer's URL: the
// harness never writes a password into a report, nor drops it silently.
const PasswordPlaceholder = "PASSWORD"

// Answer is the configuration to use for one workload at one concurrency
// level: the verdict of that cell (see Recommendation) and a URL that
// redisx.ParseURL reads, pointed at the user's server (benchmarks
// retargets it).
type Answer struct {
	Workload    string `json:"workload"`
	Concurrency int    `json:"concurrency"`
	// Strategy is the target's name, empty when the verdict is undecided;
	// Confidence Significant, Equivalent or Undecided; the others as in
	// its Recommendation.
	Strategy            string   `json:"strategy"`
	Confidence          string   `json:"confidence"`
	Margin              float64  `json:"margin"`
	MarginLo            float64  `json:"margin_lo"`
	MarginHi            float64  `json:"margin_hi"`
	IntervalLevel       float64  `json:"interval_level,omitempty"`
	PValue              float64  `json:"p_value"`
	RunnerUp            string   `json:"runner_up"`
	TieBreak            string   `json:"tie_break,omitempty"`
	Contenders          []string `json:"contenders,omitempty"`
	SuggestedMaxRepeats int      `json:"suggested_max_repeats,omitempty"`
	Alternative         string   `json:"alternative,omitempty"`
	Samples             int      `json:"samples,omitempty"`
	// URL configures Strategy for the servers measured, or the address
	// benchmarks.Retarget gave: their user name, if any, and
	// PasswordPlaceholder in place of their password, if they have one;
	// the DB and TLS measured. Empty when no URL expresses the strategy.
	URL string `json:"url"`
	// Note says what to change in URL before using it, such as the
	// address of the embedded server measured.
	Note string `json:"note,omitempty"`
	// Near is the Recommendation's: for a near-cache, its tracking mode,
	// memory and staleness.
	Near string `json:"near,omitempty"`
}

// AnswerOf is the answer of the verdict rec, its URL rec's.
func AnswerOf(rec *Recommendation) *Answer {
	return &Answer{
		Workload: rec.Workload, Concurrency: rec.Concurrency, Strategy: rec.Strategy, Confidence: rec.Confidence,
		Margin: rec.Margin, MarginLo: rec.MarginLo, MarginHi: rec.MarginHi, IntervalLevel: rec.IntervalLevel,
		PValue: rec.PValue, RunnerUp: rec.RunnerUp, TieBreak: rec.TieBreak, Contenders: rec.Contenders,
		SuggestedMaxRepeats: rec.SuggestedMaxRepeats, Alternative: rec.Alternative, Samples: rec.Samples, URL: rec.URL,
		Near: rec.Near,
	}
}
