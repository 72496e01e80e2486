#!/usr/bin/env bash
# What the synthetic web's server costs (issue #15 §1): pages per second it
# serves to a plain Go client, its CPU per page and its memory, for a small
# web (10 hosts, connections kept alive) and the 1M-page web (10,000 hosts:
# with a crawler's idle-connection budget most requests open a connection).
#
# The web is served by internal/testweb/serve in its own process, so that
# its CPU time (/proc/PID/stat) and peak RSS (VmHWM) are its own; the load
# comes from BenchmarkServeExternal (TESTWEB_CONNS requests in flight, 4
# idle connections per host, 1,024 in all). The sizes alternate, RUNS times.
#
# Usage: docs/bench-testweb.sh [RUNS] [REQUESTS]     (defaults 3 and 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
N=${2:-100000}
export TESTWEB_CONNS=${TESTWEB_CONNS:-16}

work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/serve" ./internal/testweb/serve
go test -c -o "$work/testweb.test" ./internal/testweb
echo "machine: $(nproc) cores; $TESTWEB_CONNS requests in flight; $N requests per run"

one() { # HOSTS PAGES
	"$work/serve" -hosts "$1" -pages "$2" -seed 1 -addressing loopback -addr 0.0.0.0:0 >"$work/serve.out" 2>&1 &
	server=$!
	for _ in $(seq 100); do grep -q '^ready' "$work/serve.out" && break; sleep 0.1; done
	local port heap c0 c1 bench
	port=$(sed -n 's/^ready [^ ]*:\([0-9]*\) .*/\1/p' "$work/serve.out")
	heap=$(sed -n 's/.*heap \([0-9.]*\) MiB.*/\1/p' "$work/serve.out")
	c0=$(awk '{print $14+$15}' /proc/$server/stat)
	bench=$(TESTWEB_ADDR=127.0.0.1:$port TESTWEB_HOSTS=$1 TESTWEB_PAGES=$2 "$work/testweb.test" \
		-test.run '^$' -test.bench '^BenchmarkServeExternal$' -test.benchtime "${N}x" | grep '^Benchmark')
	c1=$(awk '{print $14+$15}' /proc/$server/stat)
	local hwm pps client
	hwm=$(awk '/VmHWM/{print $2}' /proc/$server/status)
	pps=$(echo "$bench" | sed -n 's/.* \([0-9.]*\) pages\/s.*/\1/p')
	client=$(echo "$bench" | sed -n 's/.* \([0-9.]*\) client-cpu-µs\/page.*/\1/p')
	kill $server
	wait $server 2>/dev/null || true
	server=
	printf '| %s hosts, %s pages | %s | %.1f | %s | %.1f | %.1f | %s |\n' "$1" "$2" "$pps" \
		"$(echo "($c1-$c0)*10000/$N" | bc -l)" "$client" "$heap" "$(echo "$hwm/1024" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
}

echo "| web | pages/s | server CPU µs/page | client CPU µs/page | web heap MiB | server peak RSS MiB | load |"
echo "|---|---|---|---|---|---|---|"
for _ in $(seq "$RUNS"); do
	one 10 1000
	one 10000 1000000
done
