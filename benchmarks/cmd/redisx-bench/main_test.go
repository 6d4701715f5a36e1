package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
)

// readJSON reads a report.json as plain maps: the field names are the
// contract programs outside this module read.
func readJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func hasFields(t *testing.T, what string, v any, fields ...string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, not an object", what, v)
	}
	for _, f := range fields {
		if _, ok := m[f]; !ok {
			t.Errorf("%s has no %q field: %v", what, f, m)
		}
	}
}

func TestCLIRunsAgainstEmbeddedServersAndWritesTheReport(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-levels", "1,2", "-workloads", "get", "-duration", "40ms", "-repeats", "2", "-max-repeats", "2", "-peers=false",
		"-target", "mine=redis://?strategy=pool&size=2", "-out", out}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	rep := readJSON(t, out)
	cells, _ := rep["cells"].([]any)
	// multiplexed-1/2/4, pool-8/32/100 and mine, at 2 levels.
	if len(cells) != 14 {
		t.Fatalf("%d cells; want 14", len(cells))
	}
	for _, c := range cells {
		hasFields(t, "cell", c, "workload", "target", "concurrency", "qps", "qps_lo", "qps_hi", "qps_samples", "p50_ms", "p99_ms", "errors", "conns", "samples")
	}
	recs, _ := rep["recommendations"].([]any)
	if len(recs) != 2 {
		t.Fatalf("%d recommendations; want one per level", len(recs))
	}
	for _, r := range recs {
		hasFields(t, "recommendation", r, "workload", "concurrency", "strategy", "confidence", "margin", "margin_lo", "margin_hi", "p_value", "runner_up", "url")
	}
	machine, _ := rep["machine"].(map[string]any)
	if machine["embedded"] != true || machine["redis_version"] == "" {
		t.Errorf("machine = %v; want embedded, with the Redis version", machine)
	}
	if cmd, _ := rep["command"].(string); !strings.Contains(cmd, "-levels 1,2") {
		t.Errorf("command = %q; want the flags", cmd)
	}
	if !strings.Contains(stderr.String(), "ETA") || !strings.Contains(stderr.String(), "plan:") {
		t.Errorf("stderr has no progress:\n%s", stderr.String())
	}
	if stdout.Len() == 0 {
		t.Error("no summary on stdout")
	}

	// A second run compared with the first.
	out2 := t.TempDir()
	args = []string{"-levels", "1", "-workloads", "get", "-duration", "40ms", "-repeats", "2", "-max-repeats", "2", "-peers=false",
		"-out", out2, "-baseline", filepath.Join(out, "report.json")}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("baseline run: exit %d\n%s", code, stderr.String())
	}
	base, _ := readJSON(t, out2)["baseline"].(map[string]any)
	hasFields(t, "baseline", base, "file", "started", "compatible", "cells", "verdict_changes")
	if base["compatible"] != true {
		t.Errorf("baseline of the same plan on the same machine: compatible = %v, mismatches %v", base["compatible"], base["mismatches"])
	}
	if cells, _ := base["cells"].([]any); len(cells) != 6 {
		t.Errorf("%d baseline cells; want the 6 cells of level 1 measured in both runs", len(cells))
	} else {
		hasFields(t, "baseline cell", cells[0], "workload", "target", "concurrency", "old_qps", "new_qps", "change", "p_value", "significant")
	}
}

// cancelOn is a stderr that cancels the run when the progress shows text.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	text   string
	cancel func()
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.text) {
		c.cancel()
	}
	return len(p), nil
}

func TestCLIInterruptedWritesAPartialReport(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{text: "ETA", cancel: cancel} // the first progress line
	var stdout bytes.Buffer
	args := []string{"-levels", "1,2", "-workloads", "get", "-duration", "200ms", "-peers=false", "-out", out}
	if code := run(ctx, args, &stdout, stderr); code != exitInterrupted {
		t.Fatalf("exit %d; want %d\n%s", code, exitInterrupted, stderr.buf.String())
	}
	if rep := readJSON(t, out); rep["partial"] != true {
		t.Errorf("partial = %v; want true", rep["partial"])
	}
}

func TestCLIRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-levels", "1,x"},
		{"-levels", "0"},
		{"-workloads", "nope"},
		{"-slo", "99=2ms"},
		{"-target", "noequals"},
		{"-target", "bad=http://x"},
		{"-repeats", "0"},
		{"-max-repeats", "-1"},
		{"-only", "multiplexed-1,nope"},
		{"-sentinel", "127.0.0.1:26379"},
		{"-sentinel", "mymaster@127.0.0.1"},
		{"-sentinel", "mymaster@127.0.0.1:26379", "-addr", "127.0.0.1:6379"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != exitUsage {
			t.Errorf("run %q: exit %d; want %d (%s)", args, code, exitUsage, stderr.String())
		}
	}
}

// TestCLIRefusesAnOutItCannotWriteBeforeMeasuring: an -out that is a
// file is refused at once, with the flag named, before any server
// starts, rather than after a run whose reports it could not keep.
func TestCLIRefusesAnOutItCannotWriteBeforeMeasuring(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results")
	if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "sub")} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-out", out, "-workloads", "get", "-levels", "1"}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "-out") {
			t.Errorf("-out %s: exit %d, stderr %q; want %d and the flag named", out, code, stderr.String(), exitUsage)
		}
		if strings.Contains(stderr.String(), "starting") {
			t.Errorf("-out %s: servers started before the directory was refused: %q", out, stderr.String())
		}
	}
}

func TestCommandLineHidesPasswords(t *testing.T) {
	got := commandLine([]string{"-password", "p1", "-password=p2", "-url", "redis://u:p3@h:1/0", "-target", "x=redis://p4@h?strategy=pool", "-levels", "1",
		"-url=redis-sentinel://:p5@h1:26379,h2:26379/m?sentinel_password=p6&db=1"})
	for _, secret := range []string{"p1", "p2", "p3", "p4", "p5", "p6"} {
		if strings.Contains(got, secret) {
			t.Errorf("commandLine = %q; it shows %s", got, secret)
		}
	}
	if want := "redisx-bench -password xxxxx -password=xxxxx -url redis://u:xxxxx@h:1/0 -target 'x=redis://:xxxxx@h?strategy=pool' -levels 1 '-url=redis-sentinel://:xxxxx@h1:26379,h2:26379/m?sentinel_password=xxxxx&db=1'"; got != want {
		t.Errorf("commandLine = %q; want %q", got, want)
	}
}

// TestCommandLineReadsBackInAShell: the command line of a report, pasted
// into a shell, gives the harness the arguments it was run with.
func TestCommandLineReadsBackInAShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	args := []string{"-target", "pool-8b=redis://?strategy=pool&size=8", "-mix", "get:80,set:20", "-only", "", "-value", "64 B", "-x", "it's", "-levels", "1,10"}
	line := strings.TrimPrefix(commandLine(args), "redisx-bench ")
	got, err := exec.Command(sh, "-c", "for a in "+line+`; do printf '<%s>' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	var want strings.Builder
	for _, a := range args {
		want.WriteString("<" + a + ">")
	}
	if string(got) != want.String() {
		t.Errorf("sh read %q back as %s; want %s", line, got, want.String())
	}
}

func TestOnlyKeepsTheTargetsNamedAndTheUsersOwn(t *testing.T) {
	o, err := parseFlags([]string{"-only", "multiplexed-1, rueidis", "-target", "mine=redis://h?strategy=pool&size=4"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p, err := o.plan()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range p.Targets {
		names = append(names, tg.Name)
	}
	if got := strings.Join(names, ","); got != "multiplexed-1,rueidis,mine" {
		t.Errorf("targets = %s; want multiplexed-1,rueidis,mine", got)
	}
}

func TestCLITargetWithAHostMeasuresThatServer(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-levels", "1", "-workloads", "get", "-duration", "30ms", "-repeats", "2", "-peers=false",
		"-target", "there=redis://" + srv.Addr() + "?strategy=pool&size=2", "-only", "there", "-out", out}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "starting embedded") {
		t.Errorf("embedded servers started though the only target measures its own:\n%s", stderr.String())
	}
	rep := readJSON(t, out)
	machine, _ := rep["machine"].(map[string]any)
	servers, _ := machine["target_servers"].(map[string]any)
	if got, _ := servers["there"].([]any); len(got) != 1 || got[0] != srv.Addr() {
		t.Errorf("target_servers = %v; want there on %s", machine["target_servers"], srv.Addr())
	}
	recs, _ := rep["recommendations"].([]any)
	if len(recs) != 1 || !strings.HasPrefix(recs[0].(map[string]any)["url"].(string), "redis://"+srv.Addr()+"?") {
		t.Errorf("recommendations = %v; want one with a URL on %s", recs, srv.Addr())
	}
}

func TestSentinelFlagsNameTheServers(t *testing.T) {
	o, err := parseFlags([]string{"-url", "redis-sentinel://u:pw@127.0.0.1:26379/m?sentinel_password=spw", "-sentinel", "mymaster@127.0.0.1:26379, 127.0.0.1:26380"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, embedded, err := o.servers()
	if err != nil {
		t.Fatal(err)
	}
	want := redisx.SentinelOptions{Master: "mymaster", Addrs: []string{"127.0.0.1:26379", "127.0.0.1:26380"}, Password: "spw"}
	if embedded || s.Sentinel == nil || !reflect.DeepEqual(*s.Sentinel, want) || s.Username != "u" || s.Password != "pw" {
		t.Errorf("servers %+v (embedded %v), sentinel %+v; want %+v and the data nodes' user u", s, embedded, s.Sentinel, want)
	}
}
