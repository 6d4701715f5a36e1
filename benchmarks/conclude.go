package benchmarks

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/redisx-go/kit/benchmarks/verdict"
)

// conclude computes the verdicts, crossovers and SLO winners, the URL
// and Go snippet of every recommendation, and the answer.
func (r *runner) conclude() {
	rep := r.report
	rep.Recommendations = r.plan.sampling().Recommend(rep.Cells)
	for i := range rep.Recommendations {
		rec := &rep.Recommendations[i]
		rec.Looks = r.looks[levelKey{rec.Workload, rec.Concurrency}]
	}
	rep.Crossovers = verdict.FindCrossovers(rep.Recommendations)
	if rep.Recommendations == nil {
		rep.Recommendations = []verdict.Recommendation{}
	}
	if rep.Crossovers == nil {
		rep.Crossovers = []verdict.Crossover{}
	}
	peers := map[string]bool{}
	targets := map[string]Target{}
	for _, t := range r.plan.Targets {
		peers[t.Name] = t.Peer
		targets[t.Name] = t
	}
	verdict.MarkSLOWinners(rep.SLO, peers)
	r.warnLateOpenLoop()
	cluster := map[string]bool{}
	for _, w := range r.plan.Workloads {
		cluster[w.Name] = w.Cluster
	}
	for i := range rep.Recommendations {
		rec := &rep.Recommendations[i]
		if rec.Strategy == "" {
			continue // undecided: no configuration to write
		}
		t := targets[rec.Strategy]
		addrs, tlsOn := []string{r.servers.Standalone}, r.servers.TLS != nil
		if cluster[rec.Workload] {
			addrs = r.servers.Cluster
		}
		if own := r.own[t.Name]; own != nil {
			addrs, tlsOn = own.addrs, own.servers.TLS != nil
		}
		rec.URL = recommendURL(t.URL, addrs, tlsOn)
		if t.Go != "" {
			rec.Go = fmt.Sprintf("redisx.Options{Addrs: %s, Strategy: %s}", goStrings(addrs), t.Go)
		}
		rec.Near = nearAdvice(t, cellOf(rep, rec.Workload, rec.Strategy, rec.Concurrency))
	}
	rep.Answer = r.answer()
}

// recommendURL is a target's URL pointed at addrs (the first as the host,
// the others as addr= seeds), without credentials, rediss:// with TLS.
func recommendURL(raw string, addrs []string, tlsOn bool) string {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || len(addrs) == 0 {
		return ""
	}
	u.User = nil
	u.Host = addrs[0]
	if tlsOn {
		u.Scheme = "rediss"
	}
	var params []string
	for _, p := range strings.Split(u.RawQuery, "&") {
		if p != "" && !strings.HasPrefix(p, "addr=") {
			params = append(params, p)
		}
	}
	for _, a := range addrs[1:] {
		params = append(params, "addr="+a) // host:port needs no escaping in a query
	}
	u.RawQuery = strings.Join(params, "&")
	return u.String()
}

// goStrings writes ss as a Go []string literal.
func goStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}
