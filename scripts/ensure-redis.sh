#!/usr/bin/env bash
# ensure-redis.sh makes sure redis-server, redis-cli and redis-sentinel are on
# PATH, installing Debian's redis-server package (which brings redis-tools) and
# redis-sentinel package when running as root with apt-get. Safe to run any
# number of times.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

print_versions() {
	redis-server --version
	redis-cli --version
	redis-sentinel --version
}

if have redis-server && have redis-cli && have redis-sentinel; then
	print_versions
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! have apt-get; then
	echo "ensure-redis: redis-server, redis-cli and/or redis-sentinel not found on PATH." >&2
	echo "ensure-redis: install them with: sudo apt-get install -y redis-server redis-sentinel" >&2
	echo "ensure-redis: (or set REDISX_SKIP_NO_REDIS=1 to skip the tests that need them)" >&2
	exit 1
fi

echo "ensure-redis: installing Debian packages redis-server and redis-sentinel" >&2
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-sentinel

# The packages may start system services on ports 6379 and 26379. Tests start
# their own servers on free ports, so those are harmless, but stop them if we
# can.
if have service; then
	service redis-server stop >/dev/null 2>&1 || true
	service redis-sentinel stop >/dev/null 2>&1 || true
fi

if ! have redis-server || ! have redis-cli || ! have redis-sentinel; then
	echo "ensure-redis: the packages were installed but redis-server/redis-cli/redis-sentinel are still not on PATH" >&2
	exit 1
fi
print_versions
