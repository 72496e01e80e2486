#!/usr/bin/env bash
# Whether a crawl's CPU per page grows with its size: the crawler's
# CPU per page on short crawls, three runs each, alternating:
#   - the first 10,000 pages of the million-page web of 10,000 hosts
#     (the web of docs/bench-scale.sh, --max-pages 10000);
#   - a web of 100 hosts and 10,000 pages, crawled whole.
# CPU is user+sys of the crawler from /usr/bin/time; pages are the crawl
# log's lines; pages/s is pages over the crawler's wall time; peak RSS is
# time's maximum resident set; the state is the size of OUT/state (the
# frontier's store) at the end. Compare with the million-page run's CPU
# per page.
#
# Usage: docs/bench-cpu10k.sh [CRAWLER_BINARY...]   (BIN=DIR reuses DIR/serve)
#   Several binaries (an older build, say) are alternated run by run.
#   RUNS=N runs each N times (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
bin=${BIN:-$work}
[ -x "$bin/serve" ] || go build -o "$bin/serve" ./internal/testweb/serve
crawlers=("$@")
if [ ${#crawlers[@]} -eq 0 ]; then
	go build -o "$work/crawler" ./cmd/crawler
	crawlers=("$work/crawler")
fi
start() { # hosts pages
	"$bin/serve" -hosts "$1" -pages "$2" -seed 1 -seeds "$work/seeds-$1.txt" >"$work/serve-$1.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 300); do grep -q ready "$work/serve-$1.out" && return; sleep 0.1; done
	echo "serve -hosts $1 did not start" >&2
	exit 1
}
start 100 10000
start 10000 1000000
echo "machine: $(nproc) cores, $(git rev-parse --short HEAD), $(date -u +%FT%TZ)"
for r in $(seq "${RUNS:-3}"); do
	for hosts in 100 10000; do
	for crawler in "${crawlers[@]}"; do
		out=$work/out-$hosts
		rm -rf "$out"
		extra=()
		[ "$hosts" = 10000 ] && extra=(--max-pages 10000)
		/usr/bin/time -f "%U %S %e %M" -o "$work/time" "$crawler" crawl --seeds "$work/seeds-$hosts.txt" --out "$out" \
			--allow-private --delay -1 --max-depth -1 --progress-interval 0 --concurrency 64 "${extra[@]}" >/dev/null 2>&1
		n=$(wc -l <"$out/crawl.log.jsonl")
		read -r u s e m <"$work/time"
		st=$(du -sk "$out/state" | cut -f1)
		awk -v c="$(basename "$crawler")" -v h="$hosts" -v r="$r" -v n="$n" -v u="$u" -v s="$s" -v e="$e" -v m="$m" -v st="$st" \
			-v l="$(cut -d' ' -f1 /proc/loadavg)" \
			'BEGIN { printf "%s, web of %s hosts, run %s: %d pages, CPU %.2f s, wall %.2f s, %.3f ms/page, %.0f pages/s, peak RSS %.0f MiB, state %.1f MiB, load %s\n", c, h, r, n, u+s, e, 1000*(u+s)/n, n/e, m/1024, st/1024, l }'
	done
	done
done
