package benchmarks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

func TestRunAnswersForTheFirstWorkloadAtTheUsersConcurrency(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	c := workload.DefaultCustom()
	c.Keys = 100
	for _, tc := range []struct {
		at, want int
		added    bool
	}{{0, 3, false}, {1, 1, false}, {2, 2, true}} {
		p := tinyPlan("get")
		// One target: a verdict that names it (two samples of two would
		// be undecided, with no URL to check).
		p.Targets = p.Targets[:1]
		p.Workloads = append([]benchmarks.Workload{c.Workload()}, p.Workloads...)
		p.At = tc.at
		var progress strings.Builder
		rep, err := benchmarks.Run(context.Background(), p, benchmarks.Servers{Standalone: srv.Addr()}, &progress)
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, progress.String())
		}
		a := rep.Answer
		if a == nil {
			t.Fatalf("-at %d: no answer\n%s", tc.at, progress.String())
		}
		var rec *verdict.Recommendation
		for i, r := range rep.Recommendations {
			if r.Workload == "custom" && r.Concurrency == tc.want {
				rec = &rep.Recommendations[i]
			}
		}
		if rec == nil || a.Workload != "custom" || a.Concurrency != tc.want || a.Strategy != rec.Strategy ||
			a.Confidence != rec.Confidence || a.PValue != rec.PValue || a.RunnerUp != rec.RunnerUp || a.Strategy != "multiplexed" {
			t.Errorf("-at %d: answer %+v; want the verdict of custom at %d, %+v", tc.at, a, tc.want, rec)
		}
		if got := strings.Contains(progress.String(), "level 2 added"); got != tc.added {
			t.Errorf("-at %d: progress says the level was added: %v; want %v\n%s", tc.at, got, tc.added, progress.String())
		}
		if o, err := redisx.ParseURL(a.URL); err != nil || o.Addrs[0] != srv.Addr() {
			t.Errorf("answer URL %q: %v; want one for %s", a.URL, err, srv.Addr())
		}
		if len(rep.Workloads) != 2 || rep.Workloads[0].Mix != "get:90,set:10" || rep.Workloads[0].Source != "flags" || rep.Workloads[1].Name != "get" {
			t.Errorf("workloads %+v; want custom (its parts) then get", rep.Workloads)
		}
	}
}

func TestAnswerRetargetKeepsTheUserAndHidesThePassword(t *testing.T) {
	a := &verdict.Answer{URL: "redis://127.0.0.1:41001?strategy=pool&size=32"}
	to := benchmarks.AnswerAddress{Addrs: []string{"cache.internal:6380"}, Username: "alice", Password: true, DB: 2, TLS: true}
	if err := benchmarks.Retarget(a, to, "note"); err != nil {
		t.Fatal(err)
	}
	if want := "rediss://alice:PASSWORD@cache.internal:6380/2?strategy=pool&size=32"; a.URL != want || a.Note != "note" {
		t.Errorf("Retarget: URL %q, note %q; want %q", a.URL, a.Note, want)
	}
	o, err := redisx.ParseURL(a.URL)
	if err != nil || o.Username != "alice" || o.Password != verdict.PasswordPlaceholder || o.Strategy != (strategy.Pool{Size: 32}) {
		t.Errorf("ParseURL(%q) = %+v, %v; want alice, the placeholder and Pool{Size: 32}", a.URL, o, err)
	}
	// No password: no placeholder; a user alone is kept.
	a = &verdict.Answer{URL: "redis://127.0.0.1:41001?strategy=multiplexed"}
	if err := benchmarks.Retarget(a, benchmarks.AnswerAddress{Addrs: []string{"h:1", "h:2"}, Username: "bob"}, ""); err != nil {
		t.Fatal(err)
	}
	if want := "redis://bob:@h:1?strategy=multiplexed&addr=h:2"; a.URL != want {
		t.Errorf("Retarget: %q; want %q", a.URL, want)
	}
}
