#!/usr/bin/env bash
# ensure-redis.sh makes sure redis-server and redis-cli are on PATH, installing
# Debian's redis-server package (which brings redis-tools) when running as root
# with apt-get. Safe to run any number of times.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

print_versions() {
	redis-server --version
	redis-cli --version
}

if have redis-server && have redis-cli; then
	print_versions
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! have apt-get; then
	echo "ensure-redis: redis-server and/or redis-cli not found on PATH." >&2
	echo "ensure-redis: install them with: sudo apt-get install -y redis-server" >&2
	echo "ensure-redis: (or set REDISX_SKIP_NO_REDIS=1 to skip the tests that need them)" >&2
	exit 1
fi

echo "ensure-redis: installing Debian package redis-server" >&2
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server

# The package may start a system service on port 6379. Tests start their own
# servers on free ports, so that one is harmless, but stop it if we can.
if have service; then
	service redis-server stop >/dev/null 2>&1 || true
fi

if ! have redis-server || ! have redis-cli; then
	echo "ensure-redis: redis-server was installed but redis-server/redis-cli are still not on PATH" >&2
	exit 1
fi
print_versions
