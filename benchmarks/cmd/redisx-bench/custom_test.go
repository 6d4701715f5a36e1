package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisx-go/kit/internal/launcher"
)

func TestCLIRunsTheUsersWorkloadAndOpensWithTheAnswer(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	// One target: two samples of two would leave the answer undecided,
	// with no URL to check.
	args := []string{"-mix", "get:90,set:10", "-keys", "100", "-quick", "-levels", "1,2", "-duration", "30ms", "-repeats", "2",
		"-only", "pool-8", "-at", "3", "-out", out}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	rep := readJSON(t, out)
	ws, _ := rep["workloads"].([]any)
	if len(ws) != 1 {
		t.Fatalf("workloads = %v; want custom alone", rep["workloads"])
	}
	hasFields(t, "workload", ws[0], "name", "mix", "keys", "key_dist", "value", "batch", "ttl", "source")
	if w := ws[0].(map[string]any); w["name"] != "custom" || w["mix"] != "get:90,set:10" || w["keys"] != 100.0 || w["source"] != "flags" {
		t.Errorf("workload = %v; want custom, get:90,set:10 over 100 keys, from flags", w)
	}
	hasFields(t, "answer", rep["answer"], "workload", "concurrency", "strategy", "confidence", "url")
	a := rep["answer"].(map[string]any)
	if a["workload"] != "custom" || a["concurrency"] != 3.0 || !strings.HasPrefix(a["url"].(string), "redis://127.0.0.1:") {
		t.Errorf("answer = %v; want custom at 3 goroutines (-at, a level added), a URL of the embedded server", a)
	}
	for _, c := range rep["cells"].([]any) {
		if c := c.(map[string]any); c["workload"] != "custom" {
			t.Errorf("a cell of %v: want custom only", c["workload"])
		}
	}
	// The first lines name the one configuration, and the address to replace.
	if first, _, _ := strings.Cut(stdout.String(), "\n"); !strings.HasPrefix(first, "answer: use "+a["strategy"].(string)+" for custom at 3 goroutines") {
		t.Errorf("stdout opens with %q; want the answer", first)
	}
	if !strings.Contains(stdout.String(), "replace 127.0.0.1:") {
		t.Errorf("stdout does not say which address to replace:\n%s", stdout.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(md), "# redisx-bench report\n\n**Answer: use `"+a["strategy"].(string)+"` for custom at 3 goroutines**") {
		t.Errorf("report.md opens with:\n%.300s\nwant the answer after the title", md)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if i, j := bytes.Index(page, []byte(`id="answer"`)), bytes.Index(page, []byte(`<dl class="meta">`)); i < 0 || i > j {
		t.Errorf("report.html: the answer at %d, the run's details at %d; want the answer first", i, j)
	}
}

func TestCLIWorkloadFlagsDefineCustomAloneUnlessWorkloadsNamesOthers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-value", "64-4096"}, "custom"},
		{[]string{"-workloads", "custom"}, "custom"},
		{[]string{"-ttl", "1m", "-workloads", "get,custom"}, "custom,get"},
		{[]string{"-workloads", "get"}, "get"},
		{[]string{"-quick", "-keys", "10", "-workloads", "setget"}, "custom,setget"},
	} {
		o, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		p, err := o.plan()
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		var names []string
		for _, w := range p.Workloads {
			names = append(names, w.Name)
		}
		if got := strings.Join(names, ","); got != tc.want {
			t.Errorf("%q: workloads %s; want %s", tc.args, got, tc.want)
		}
	}
}

func TestCLIRejectsBadWorkloadFlagsSayingWhy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"-mix", "get:90,foo:10"}, `unknown op "foo" (ops: get, set, del, mget, mset)`},
		{[]string{"-mix", "get:0"}, "not a positive number"},
		{[]string{"-key-dist", "zipf:0"}, "zipf:S"},
		{[]string{"-value", "600MiB"}, "512 MiB"},
		{[]string{"-value", "4096-64"}, "backwards"},
		{[]string{"-keys", "0"}, "-keys 0"},
		{[]string{"-batch", "20", "-keys", "10", "-mix", "mget:1"}, "-batch 20"},
		{[]string{"-ttl", "-1s"}, "-ttl"},
		{[]string{"-keys", "100000000", "-value", "4KiB"}, "lower -keys"},
		{[]string{"-at", "-1"}, "-at -1"},
		{[]string{"-profile", "http://x"}, "-profile"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("run %q: exit %d, %q; want %d saying %q", tc.args, code, stderr.String(), exitUsage, tc.says)
		}
	}
}

func TestCLIRefusesToMeasureTheProfiledServerUnlessForced(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	port := srv.Addr()[strings.LastIndex(srv.Addr(), ":"):]
	var stdout, stderr bytes.Buffer
	args := []string{"-profile", "redis://localhost" + port, "-addr", srv.Addr(), "-quick"}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "-force") {
		t.Errorf("-profile and -addr the same server: exit %d, %q; want %d, naming -force", code, stderr.String(), exitUsage)
	}
	stderr.Reset()
	args = []string{"-profile", srv.Addr(), "-addr", srv.Addr(), "-force", "-levels", "1", "-duration", "20ms", "-repeats", "1",
		"-only", "multiplexed-1", "-keys", "10", "-out", t.TempDir()}
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Errorf("with -force: exit %d; want %d\n%s", code, exitOK, stderr.String())
	}
}

func TestCLIAnswerKeepsTheUserNameAndHidesThePassword(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := context.Background()
	if _, err := srv.CLI(ctx, "ACL", "SETUSER", "alice", "on", ">s3cret-pw", "~*", "+@all"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = srv.CLI(ctx, "ACL", "DELUSER", "alice") })
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-url", "redis://alice:s3cret-pw@" + srv.Addr(), "-mix", "get:1", "-keys", "10", "-levels", "1",
		"-duration", "20ms", "-repeats", "1", "-only", "pool-8", "-force", "-out", out}
	if code := run(ctx, args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	a, _ := readJSON(t, out)["answer"].(map[string]any)
	if want := "redis://alice:PASSWORD@" + srv.Addr() + "?strategy=pool&size=8"; a["url"] != want {
		t.Errorf("answer url %v; want %s", a["url"], want)
	}
	for _, f := range []string{"report.json", "report.md", "report.html", "report.csv"} {
		if data, _ := os.ReadFile(filepath.Join(out, f)); bytes.Contains(data, []byte("s3cret-pw")) {
			t.Errorf("%s holds the password", f)
		}
	}
	if strings.Contains(stdout.String(), "s3cret-pw") || !strings.Contains(stdout.String(), "PASSWORD stands for your password") {
		t.Errorf("stdout shows the password, or does not say what PASSWORD stands for:\n%s", stdout.String())
	}
}

func TestDerivedCommandReplacesTheWorkloadFlags(t *testing.T) {
	o, err := parseFlags([]string{"-mix", "get:1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := o.custom()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-profile=redis://:pw@prod:6379", "-quick", "-mix", "set:1", "-addr", "staging:6379", "-password", "pw2", "--ttl=1m", "-at", "200"}
	want := "redisx-bench -mix get:1 -keys 10000 -key-dist uniform -value 64 -batch 10 -ttl 0s -quick -addr staging:6379 -password xxxxx -at 200"
	if got := derivedCommand(args, c); got != want {
		t.Errorf("derivedCommand = %q; want %q", got, want)
	}
}
