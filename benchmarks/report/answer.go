package report

import (
	"cmp"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
)

// The answer at the top of every report (text, Markdown, HTML), and what
// each workload was.

// renderAnswerVerdict is the answer's verdict after its configuration:
// "significant: +12.0% (95% interval [+8.1%, +15.2%]) over
// multiplexed-1, p = 0.002".
func renderAnswerVerdict(a *verdict.Answer, margin float64) string {
	iv := renderWithInterval(a.Margin, a.MarginLo, a.MarginHi, a.IntervalLevel)
	switch {
	case a.RunnerUp == "":
		return "the only redisx target measured"
	case a.Confidence == verdict.Significant:
		return fmt.Sprintf("significant: %s over %s, %s", iv, a.RunnerUp, verdict.PText(a.PValue))
	case a.Confidence == verdict.Equivalent:
		return fmt.Sprintf("equivalent to %s within %s: %s, %s; named by the tie-break toward fewer connections",
			a.RunnerUp, renderMargin(margin), iv, verdict.PText(a.PValue))
	}
	return fmt.Sprintf("%s: %s against %s, %s", a.Confidence, iv, a.RunnerUp, verdict.PText(a.PValue))
}

// renderAnswerHead is the answer's first line, without a prefix: the
// configuration to use, or, undecided, the contenders and what would
// decide between them.
func renderAnswerHead(a *verdict.Answer, margin float64) string {
	at := fmt.Sprintf("%s at %s", a.Workload, renderGoroutines(a.Concurrency))
	if a.Confidence == verdict.Undecided {
		return fmt.Sprintf("undecided between %s for %s: %s", renderList(a.Contenders), at,
			renderUndecided(margin, first(a.Contenders), a.RunnerUp, a.Margin, a.MarginLo, a.MarginHi, a.IntervalLevel, a.Samples, a.SuggestedMaxRepeats))
	}
	return fmt.Sprintf("use %s for %s — %s", a.Strategy, at, renderAnswerVerdict(a, margin))
}

// renderAnswerPassword says what the placeholder in the URL stands for;
// empty when it has none.
func renderAnswerPassword(a *verdict.Answer) string {
	if !strings.Contains(a.URL, ":"+verdict.PasswordPlaceholder+"@") {
		return ""
	}
	return verdict.PasswordPlaceholder + " stands for your password: put it in, or keep it out of the URL and set Options.Password"
}

// renderWorkloadText is what workload name was, from the report's
// Workloads: the custom workload as the flags that run it again, the
// others' descriptions; empty when the report does not say.
func renderWorkloadText(r *verdict.Report, name string) string {
	for _, w := range r.Workloads {
		switch {
		case w.Name != name:
		case w.Mix == "":
			return w.Description
		default:
			from := "given by the flags"
			if w.Source == workload.SourceProfile {
				from = "read from the profiled server"
			}
			return fmt.Sprintf("-mix %s -keys %d -key-dist %s -value %s -batch %d -ttl %s (%s)",
				w.Mix, w.Keys, w.KeyDist, w.Value, w.Batch, cmp.Or(w.TTL, "0s"), from)
		}
	}
	return ""
}

// renderAnswerText writes the answer block that opens the summary.
func renderAnswerText(b *strings.Builder, r *verdict.Report) {
	a := r.Answer
	if a == nil {
		return
	}
	renderWrap(b, "answer: "+renderAnswerHead(a, r.Settings.Margin), "    ")
	switch {
	case a.Strategy == "":
		b.WriteString("  no configuration named\n")
	case a.URL != "":
		b.WriteString("  url: " + a.URL + "\n")
	default:
		b.WriteString("  (no URL expresses this configuration; see its Go snippet below)\n")
	}
	if a.Alternative != "" {
		renderWrap(b, "  alternative: "+renderOneLine(a.Alternative), "    ")
	}
	for _, s := range []string{renderAnswerPassword(a), a.Note, a.Near} {
		if s != "" {
			renderWrap(b, "  "+renderOneLine(s), "    ")
		}
	}
	if w := renderWorkloadText(r, a.Workload); w != "" {
		renderWrap(b, "  workload "+a.Workload+": "+renderOneLine(w), "    ")
	}
	b.WriteString("\n")
}

// renderAnswerMD writes the answer section that opens report.md.
func renderAnswerMD(b *strings.Builder, r *verdict.Report) {
	a := r.Answer
	if a == nil {
		return
	}
	if a.Confidence == verdict.Undecided {
		names := make([]string, len(a.Contenders))
		for i, n := range a.Contenders {
			names[i] = renderMDCode(n)
		}
		fmt.Fprintf(b, "**Answer: undecided between %s for %s at %s** — %s.\n\n", renderList(names), renderMD(a.Workload),
			renderGoroutines(a.Concurrency), renderMD(renderUndecided(r.Settings.Margin, first(a.Contenders), a.RunnerUp,
				a.Margin, a.MarginLo, a.MarginHi, a.IntervalLevel, a.Samples, a.SuggestedMaxRepeats)))
	} else {
		fmt.Fprintf(b, "**Answer: use %s for %s at %s** — %s.\n\n", renderMDCode(a.Strategy), renderMD(a.Workload),
			renderGoroutines(a.Concurrency), renderMD(renderAnswerVerdict(a, r.Settings.Margin)))
	}
	if a.URL != "" {
		fmt.Fprintf(b, "URL: %s\n\n", renderMDCode(a.URL))
	}
	if a.Alternative != "" {
		fmt.Fprintf(b, "Alternative: %s.\n\n", renderMD(a.Alternative))
	}
	for _, s := range []string{renderAnswerPassword(a), a.Note, a.Near} {
		if s != "" {
			b.WriteString(renderMD(renderCapital(s)) + ".\n\n")
		}
	}
	if w := renderWorkloadText(r, a.Workload); w != "" {
		fmt.Fprintf(b, "Workload %s: %s\n\n", renderMD(a.Workload), renderMD(w))
	}
}

// renderPageAnswer is the answer on report.html; Class is its
// confidence.
type renderPageAnswer struct {
	Head, URL, Password, Note, Near, Workload, Alternative, Class string
}

func renderHTMLAnswer(r *verdict.Report) *renderPageAnswer {
	a := r.Answer
	if a == nil {
		return nil
	}
	p := &renderPageAnswer{Head: renderAnswerHead(a, r.Settings.Margin), URL: a.URL, Password: renderCapital(renderAnswerPassword(a)),
		Note: renderCapital(a.Note), Near: renderCapital(a.Near), Alternative: a.Alternative, Class: "decided"}
	if a.Confidence == verdict.Undecided {
		p.Class = "undecided"
	}
	if w := renderWorkloadText(r, a.Workload); w != "" {
		p.Workload = a.Workload + ": " + w
	}
	return p
}

// renderCapital is s with its first letter upper case, for a sentence.
func renderCapital(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
