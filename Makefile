# Developer and CI entry points. `make test` is what .ci/run runs.

SHELL := /bin/bash

GO ?= go
GOFMT ?= $(shell $(GO) env GOROOT)/bin/gofmt
# Tool versions checked to build and run with Go 1.26.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHSTAT ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

COUNT ?= 3
BENCHTIME ?= 1s
FUZZTIME ?= 10s
COVERPROFILE ?= coverage.out

.PHONY: test test-beside lint bench bench-go bars fuzz cover ensure-redis

# Packages tested at a time by make test, and the tests that run alone,
# after the others (see test): those whose deadline or timing check
# failed now and then beside another package on 2 cores — R2's calls to
# their deadline + 100 ms, the pacer's lateness, R3's 300 ms calls before
# the kill, a retry's deadline, go-redis's calls within 2 s of a cut.
TESTP ?= 2
ALONE = TestReliabilityServerKilled|TestPacerSendsOnTime|TestClusterMasterFailoverUnderLoad|TestRetryWithinTheDeadline|TestGoRedisBackendContract
# The tests that count allocations or re-run the SLO search's rate, which
# mean something only without -race (see test), and their packages.
NORACE = Allocations|TestSLOHoldsWhereItSaysOnRealServers
NORACEPKGS = $(shell grep -rlE 'func Test[A-Za-z0-9_]*(Allocations|SLOHoldsWhereItSaysOnRealServers)' --include='*_test.go' . | xargs -n1 dirname | sort -u)

# How make test runs what computes beside the tests, which mostly wait:
# SCHED_IDLE, which a core gives time to only when no other process
# wants it, or else the lowest nice.
IDLE ?= $(shell command -v chrt >/dev/null 2>&1 && echo 'chrt --idle 0' || echo 'nice -n 19')

# The module's packages, those with the most bytes of test code (a proxy
# for the longest test runs) first.
TESTPKGS = $(shell $(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | \
	while read -r pkg dir; do printf '%s %s\n' "$$(cat "$$dir"/*_test.go 2>/dev/null | wc -c)" "$$pkg"; done | \
	sort -rn | cut -d' ' -f2)

ensure-redis:
	bash scripts/ensure-redis.sh

test:
	bash scripts/ensure-redis.sh
	# The race test binaries are built first (-exec true runs none of
	# them), on every core (cold build cache: about 1.5 minutes on 2).
	# Build errors are shown by the run below.
	$(GO) test -race -count=1 -exec true ./... >/dev/null 2>&1 || true
	# TESTP packages at a time (default 2), the packages with the most
	# test code first. The tests wait more than they compute (servers
	# starting, failovers, deadlines: two packages at a time use about
	# one core of 2), so what only computes runs beside them, at IDLE
	# priority, on the time they leave: lint (gofmt, vet, staticcheck:
	# about 1.5 minutes of 2 cores with a cold cache), what a user does
	# from a module of their own (user-module.sh: build the README's
	# quick start, run redisx-bench as a tool of the module) and the
	# build of the NORACE binaries. Its output follows the tests', and
	# its failure fails make test. Two at a time take about 5 minutes
	# instead of 10 at one; the deadline checks that failed now and then
	# beside another package are ALONE's, run after.
	@log="$$(mktemp)"; \
	$(IDLE) make --no-print-directory test-beside GO="$(GO)" >"$$log" 2>&1 & beside=$$!; \
	status=0; \
	$(GO) test -race -count=1 -p $(TESTP) -skip '$(ALONE)' -timeout 15m $(TESTPKGS) || status=1; \
	echo "# beside the tests, at $(IDLE):"; \
	wait $$beside || { status=1; echo "# lint or user-module.sh failed:"; }; \
	cat "$$log"; rm -f "$$log"; \
	exit $$status
	# The tests named by ALONE measure what needs the cores to itself —
	# R2 holds each call of 200 goroutines under -race to its deadline +
	# 100 ms, the pacer its p99 lateness to 500 us, R3 50 goroutines'
	# calls to 300 ms until the kill, go-redis's calls to 2 s across a
	# cut — so they run after, one package at a time, in the packages
	# that have them.
	$(GO) test -race -count=1 -p 1 -run '$(ALONE)' \
		$$(grep -rlE 'func ($(ALONE))' --include='*_test.go' . | xargs -n1 dirname | sort -u)
	# Allocation bars (P7) are exact counts, meaningful only without -race;
	# so is the SLO search's re-run at the rate it found (bar H2). Only the
	# packages that have such tests are built again (found by grep, so that
	# a new one is not left out), beside the tests above.
	$(GO) test -count=1 -run '$(NORACE)' $(NORACEPKGS)

# What make test runs beside its race tests, at IDLE priority.
test-beside: lint
	bash scripts/user-module.sh
	$(GO) test -count=1 -exec true $(NORACEPKGS) >/dev/null 2>&1 || true

lint:
	@unformatted="$$($(GOFMT) -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt -l: these files need formatting (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The harness: the full matrix (about a quarter of an hour) into ./results/
# (report.json/.csv/.md/.html). BENCHFLAGS adds flags, e.g.
# BENCHFLAGS=-quick, or BENCHFLAGS='-baseline old/report.json'.
BENCHFLAGS ?=
bench:
	bash scripts/ensure-redis.sh
	$(GO) run ./benchmarks/cmd/redisx-bench -out results $(BENCHFLAGS)

# The go test -bench suite, summarized by benchstat; any failure fails.
bench-go:
	bash scripts/ensure-redis.sh
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -count=$(COUNT) -benchtime=$(BENCHTIME) -timeout 60m ./benchmarks/ | tee bench.txt
	$(GO) run $(BENCHSTAT) bench.txt

# The performance bars of DESIGN.md as side-by-side ratios (alternating
# rounds, medians); fails when a bar is missed. ROUNDS and SECONDS size it;
# BARS selects some, e.g. make bars BARS='P8|P9'.
ROUNDS ?= 5
SECONDS ?= 1
BARS ?=
bars:
	bash scripts/ensure-redis.sh
	REDISX_BARS=1 REDISX_BARS_ROUNDS=$(ROUNDS) REDISX_BARS_SECONDS=$(SECONDS) $(GO) test -count=1 -run 'TestBars/$(BARS)' -v -timeout 60m ./benchmarks/

# Every fuzz target of the module, FUZZTIME each: go test -fuzz takes one
# target per run, so list them (go test -list) and run them in turn.
fuzz:
	@set -eo pipefail; \
	targets="$$($(GO) test -list '^Fuzz' ./... | awk '/^Fuzz/ { t[n++] = $$1; next } /^ok/ { for (i = 0; i < n; i++) print $$2 " " t[i]; n = 0 }')"; \
	[ -n "$$targets" ] || { echo "no fuzz targets found"; exit 1; }; \
	while read -r pkg target; do \
		echo "== $$target ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done <<< "$$targets"

cover:
	bash scripts/ensure-redis.sh
	$(GO) test -race -count=1 -timeout 10m -covermode=atomic -coverprofile=$(COVERPROFILE) ./...
	$(GO) tool cover -func=$(COVERPROFILE) | tail -n 1
