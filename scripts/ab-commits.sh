#!/usr/bin/env bash
# ab-commits.sh OLD [ROUNDS] [getloop flags...]: builds scripts/getloop at
# OLD (in a temporary git worktree) and at the working tree, and runs them
# in alternating rounds against one server, so that two commits of the
# library are compared through the same loop. Start a server first, e.g.
#   taskset -c 1 redis-server --port 17777 --save '' --daemonize yes
#   scripts/ab-commits.sh 56a1692 5 -addr 127.0.0.1:17777 -g 10,100,1000
# Prefix with "taskset -c 0" to give the client one core.
set -euo pipefail
old=${1:?usage: ab-commits.sh OLD [ROUNDS] [getloop flags...]}
rounds=${2:-5}
shift $(( $# >= 2 ? 2 : 1 ))
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$root" worktree add --detach "$tmp/old" "$old" >/dev/null
mkdir -p "$tmp/old/scripts/getloop"
cp "$root/scripts/getloop/main.go" "$tmp/old/scripts/getloop/"
(cd "$tmp/old" && go build -o "$tmp/getloop-old" ./scripts/getloop)
(cd "$root" && go build -o "$tmp/getloop-new" ./scripts/getloop)
for r in $(seq "$rounds"); do
	for side in old new; do
		echo "round $r $side $("$tmp/getloop-$side" "$@" | tr '\n' ' ')"
	done
done
