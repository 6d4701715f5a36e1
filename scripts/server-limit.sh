#!/usr/bin/env bash
# server-limit.sh [ROUNDS] [SECONDS]: how close Multiplexed{} comes to the
# server's own limit. It starts a redis-server on a free loopback port,
# pinned to the last CPU, and alternates rounds of GETs of 64 B values from
# redis-benchmark (-P 16 -c 50: 50 connections of 16 pipelined commands,
# what the server serves fastest) and from scripts/getloop at 100 and 1000
# goroutines, both clients on the other CPUs (CLIENT_CPUS=all: anywhere,
# the server's CPU included). It prints each round and the median of each
# side's GET/s and their ratio.
#   scripts/server-limit.sh 7 2
#   CLIENT_CPUS=all scripts/server-limit.sh 7 2
set -euo pipefail
rounds=${1:-5}
secs=${2:-2}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
last=$(( $(nproc) - 1 ))
client=${CLIENT_CPUS:-0-$(( last > 0 ? last - 1 : 0 ))}
[ "$client" = all ] && client="0-$last"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
taskset -c "$last" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$tmp" --daemonize yes --logfile "$tmp/redis.log"
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
(cd "$root" && go build -o "$tmp/getloop" ./scripts/getloop)
# The keys both read: redis-benchmark's key:000000000000..999 and getloop's own.
redis-benchmark -p "$port" -t set -r 1000 -d 64 -n 20000 -q >/dev/null
n=$(( 400000 * secs ))
for r in $(seq "$rounds"); do
	rb=$(taskset -c "$client" redis-benchmark -p "$port" -t get -r 1000 -d 64 -P 16 -c 50 -n "$n" --csv |
		awk -F'"' '/GET/ {print $4}')
	gl=$(taskset -c "$client" "$tmp/getloop" -addr "127.0.0.1:$port" -g 100,1000 -d "${secs}s" |
		awk '{sub(/^g=/, "g"); printf "%s=%s ", $1, $2}')
	echo "round $r redis-benchmark=$rb $gl"
done | tee "$tmp/rounds"
python3 - "$tmp/rounds" <<'PY'
import re, statistics, sys
rows = [dict(re.findall(r'(\S+)=([\d.]+)', l)) for l in open(sys.argv[1])]
bench = statistics.median(float(r['redis-benchmark']) for r in rows)
print(f"redis-benchmark -P 16 -c 50: {bench:,.0f} GET/s (median of {len(rows)})")
for k in sorted(k for k in rows[0] if k != 'redis-benchmark'):
    v = statistics.median(float(r[k]) for r in rows)
    ratios = sorted(float(r[k]) / float(r['redis-benchmark']) for r in rows)
    print(f"getloop {k}: {v:,.0f} GET/s, {v/bench:.2f} of it (per-round ratios {ratios[0]:.2f}-{ratios[-1]:.2f})")
PY
