#!/usr/bin/env bash
# user-module.sh does what a user of the kit does, from a module of their
# own outside this checkout (a `replace` points at the checkout, since the
# module path is not fetched from a proxy here):
#   1. builds the README's quick start, pasted as main.go;
#   2. adds the harness as a tool of the module (Go 1.24's tool directive)
#      and runs `go tool redisx-bench` on a tiny plan against a
#      redis-server this script starts on a free loopback port.
# It fails when either step fails. Run by `make test`.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"
work="$(mktemp -d)"
server_pid=""
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# The first ```go block after "## Quick start" is the program a user pastes.
awk '
	/^## Quick start/ { inside = 1; next }
	inside && /^```go$/ { copying = 1; next }
	copying && /^```$/ { exit }
	copying { print }
' "$repo/README.md" >"$work/main.go"
if ! grep -q '^package main$' "$work/main.go"; then
	echo "user-module: README.md's quick start is not a whole program (no package main)" >&2
	exit 1
fi

cd "$work"
"$GO" mod init example.com/service >/dev/null 2>&1
"$GO" mod edit -require=github.com/redisx-go/kit@v0.0.0 -replace=github.com/redisx-go/kit="$repo"
"$GO" mod tidy
"$GO" build -o /dev/null .
echo "user-module: the README's quick start builds in a module of its own" >&2

# A user runs `go get -tool github.com/redisx-go/kit/benchmarks/cmd/redisx-bench@latest`;
# with the module replaced by this checkout, go get would still ask the
# proxy for a version, so the tool line is written and resolved by hand:
# the same go.mod and go.sum as go get leaves.
"$GO" mod edit -tool=github.com/redisx-go/kit/benchmarks/cmd/redisx-bench
"$GO" mod tidy
# A free port below Linux's ephemeral range (32768 and up), so that no
# client's outgoing connection holds it; a port taken meanwhile makes
# redis-server exit, and another is tried.
ready=""
for _ in $(seq 5); do
	port=$((20000 + RANDOM % 12000))
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 100); do
		if redis-cli -p "$port" ping >/dev/null 2>&1; then
			ready=1
			break
		fi
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	[ -n "$ready" ] && break
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
done
if [ -z "$ready" ]; then
	echo "user-module: redis-server did not start on a loopback port:" >&2
	cat "$work/redis.log" >&2
	exit 1
fi
"$GO" tool redisx-bench -addr "127.0.0.1:$port" -workloads get -levels 1 -duration 50ms -repeats 4 \
	-peers=false -only multiplexed,pool-8 -out "$work/results" >"$work/bench.out"
test -s "$work/results/report.json"
echo "user-module: go tool redisx-bench ran from a module of its own: $(head -n 1 "$work/bench.out")"
