package report

import (
	"cmp"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redisx-go/kit/benchmarks"
)

// The answer at the top of every report (text, Markdown, HTML), and what
// each workload was.

// renderAnswerVerdict is the answer's verdict after its configuration:
// "significant: +12.0% over multiplexed-1, p = 0.002".
func renderAnswerVerdict(a *benchmarks.Answer) string {
	switch {
	case a.RunnerUp == "":
		return "the only redisx target measured"
	case a.Confidence == benchmarks.Significant:
		return fmt.Sprintf("significant: %s over %s, p = %s", renderPercent(a.Margin), a.RunnerUp, renderP(a.PValue))
	}
	return fmt.Sprintf("a tie (%s against %s, p = %s), named by the tie-break toward fewer connections",
		renderPercent(a.Margin), a.RunnerUp, renderP(a.PValue))
}

// renderAnswerHead is the answer's first line, without a prefix.
func renderAnswerHead(a *benchmarks.Answer) string {
	return fmt.Sprintf("use %s for %s at %s — %s", a.Strategy, a.Workload, renderGoroutines(a.Concurrency), renderAnswerVerdict(a))
}

// renderAnswerPassword says what the placeholder in the URL stands for;
// empty when it has none.
func renderAnswerPassword(a *benchmarks.Answer) string {
	if !strings.Contains(a.URL, ":"+benchmarks.PasswordPlaceholder+"@") {
		return ""
	}
	return benchmarks.PasswordPlaceholder + " stands for your password: put it in, or keep it out of the URL and set Options.Password"
}

// renderWorkloadText is what workload name was, from the report's
// Workloads: the custom workload as the flags that run it again, the
// others' descriptions; empty when the report does not say.
func renderWorkloadText(r *benchmarks.Report, name string) string {
	for _, w := range r.Workloads {
		switch {
		case w.Name != name:
		case w.Mix == "":
			return w.Description
		default:
			from := "given by the flags"
			if w.Source == benchmarks.SourceProfile {
				from = "read from the profiled server"
			}
			return fmt.Sprintf("-mix %s -keys %d -key-dist %s -value %s -batch %d -ttl %s (%s)",
				w.Mix, w.Keys, w.KeyDist, w.Value, w.Batch, cmp.Or(w.TTL, "0s"), from)
		}
	}
	return ""
}

// renderAnswerText writes the answer block that opens the summary.
func renderAnswerText(b *strings.Builder, r *benchmarks.Report) {
	a := r.Answer
	if a == nil {
		return
	}
	renderWrap(b, "answer: "+renderAnswerHead(a), "    ")
	if a.URL != "" {
		b.WriteString("  url: " + a.URL + "\n")
	} else {
		b.WriteString("  (no URL expresses this configuration; see its Go snippet below)\n")
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
func renderAnswerMD(b *strings.Builder, r *benchmarks.Report) {
	a := r.Answer
	if a == nil {
		return
	}
	fmt.Fprintf(b, "**Answer: use %s for %s at %s** — %s.\n\n", renderMDCode(a.Strategy), renderMD(a.Workload),
		renderGoroutines(a.Concurrency), renderMD(renderAnswerVerdict(a)))
	if a.URL != "" {
		fmt.Fprintf(b, "URL: %s\n\n", renderMDCode(a.URL))
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

// renderPageAnswer is the answer on report.html.
type renderPageAnswer struct {
	Head, URL, Password, Note, Near, Workload string
}

func renderHTMLAnswer(r *benchmarks.Report) *renderPageAnswer {
	a := r.Answer
	if a == nil {
		return nil
	}
	p := &renderPageAnswer{Head: renderAnswerHead(a), URL: a.URL, Password: renderCapital(renderAnswerPassword(a)), Note: renderCapital(a.Note),
		Near: renderCapital(a.Near)}
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
