package benchmarks

import (
	"crypto/tls"
	"fmt"
	"slices"

	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/redisx"
)

// The one answer of a run (verdict.Answer), its URL pointed at the
// user's own server.

// AnswerAddress is the server an answer's URL points at (see Retarget).
type AnswerAddress struct {
	// Addrs are host:port: the first is the URL's host, the others its
	// addr= seeds.
	Addrs    []string
	Username string
	// Password says the server needs one: the URL holds
	// verdict.PasswordPlaceholder in its place.
	Password bool
	DB       int
	TLS      bool
	// Sentinel, when set, names the sentinels the URL goes through
	// (a redis-sentinel URL; Addrs are then ignored): a password of
	// theirs is verdict.PasswordPlaceholder in the URL too.
	Sentinel *redisx.SentinelOptions
}

// Retarget points a's URL at to, keeping its strategy, and sets its Note.
func Retarget(a *verdict.Answer, to AnswerAddress, note string) error {
	if a.URL != "" {
		u, err := answerURL(a.URL, to)
		if err != nil {
			return err
		}
		a.URL = u
	}
	a.Note = note
	return nil
}

// answerURL is the strategy of the URL raw for the server to.
func answerURL(raw string, to AnswerAddress) (string, error) {
	o, err := redisx.ParseURL(raw)
	if err != nil {
		return "", fmt.Errorf("benchmarks: answer URL: %w", err)
	}
	o.Addrs, o.Username, o.Password, o.DB, o.TLS = to.Addrs, to.Username, "", to.DB, nil
	if to.Password {
		o.Password = verdict.PasswordPlaceholder
	}
	if to.TLS {
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if to.Sentinel != nil {
		o.Sentinel = target.CloneSentinel(to.Sentinel)
	}
	if o.Sentinel != nil && o.Sentinel.Password != "" {
		o.Sentinel.Password = verdict.PasswordPlaceholder
	}
	u, err := redisx.FormatURL(o)
	if err != nil {
		return "", fmt.Errorf("benchmarks: answer URL: %w", err)
	}
	return u, nil
}

// prepareAnswer picks the workload of the answer: the plan's first that
// runs (custom comes first when the plan has it). When Plan.At is not
// among its levels, At is added to them, and progress says so.
func (r *runner) prepareAnswer() {
	for i := range r.plan.Workloads {
		w := &r.plan.Workloads[i]
		if !slices.Contains(r.report.Settings.Workloads, w.Name) {
			continue
		}
		r.answerWorkload = w.Name
		if at := r.plan.At; at > 0 {
			levels := r.plan.LevelsOf(*w)
			if !slices.Contains(levels, at) {
				w.Levels = append(slices.Clone(levels), at)
				slices.Sort(w.Levels)
				fmt.Fprintf(r.out, "the answer is for %s at %d goroutines (-at): level %d added to its levels %v\n", w.Name, at, at, levels)
			}
		}
		return
	}
}

// answer is the verdict of the answer's workload at Plan.At (0: its
// highest level with a verdict), its URL pointed at the servers measured;
// nil when that cell has no verdict. An undecided verdict is an answer
// too: it names no configuration.
func (r *runner) answer() *verdict.Answer {
	var rec *verdict.Recommendation
	for i, c := range r.report.Recommendations {
		if c.Workload != r.answerWorkload || c.Strategy == "" && c.Confidence != verdict.Undecided {
			continue
		}
		if c.Concurrency == r.plan.At || r.plan.At == 0 && (rec == nil || c.Concurrency > rec.Concurrency) {
			rec = &r.report.Recommendations[i]
		}
	}
	if rec == nil {
		if r.answerWorkload != "" {
			fmt.Fprintf(r.out, "no answer: %s has no verdict at %d goroutines\n", r.answerWorkload, r.plan.At)
		}
		return nil
	}
	a := verdict.AnswerOf(rec)
	if rec.Strategy == "" {
		return a
	}
	var t Target
	for _, tg := range r.plan.Targets {
		if tg.Name == rec.Strategy {
			t = tg
		}
	}
	s := r.servers
	to := AnswerAddress{Addrs: []string{s.Standalone}, Username: s.Username, Password: s.Password != "", DB: s.DB, TLS: s.TLS != nil, Sentinel: s.Sentinel}
	if slices.ContainsFunc(r.plan.Workloads, func(w Workload) bool { return w.Name == rec.Workload && w.Cluster }) {
		to.Addrs = s.Cluster
	}
	if t.URL == "" {
		return a
	}
	if !to.Password {
		// A URLTarget's own credentials connect when the run has none.
		if o, err := redisx.ParseURL(t.URL); err == nil && o.Password != "" {
			to.Username, to.Password = o.Username, true
		}
	}
	if u, err := answerURL(t.URL, to); err == nil {
		a.URL = u
	} else {
		// rec.URL, without credentials, stands.
		a.Note = "the URL holds no credentials: " + err.Error()
	}
	return a
}
