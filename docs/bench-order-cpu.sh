#!/usr/bin/env bash
# CPU per page of --order fifo against --order inlinks: a web of 100 hosts
# and 10,000 pages (internal/testweb), crawled whole, RUNS runs of each
# (default 5), interleaved; prints each run and the medians. CPU is
# user+sys of the crawler from /usr/bin/time; pages are the crawl log's
# lines.
#
# Usage: docs/bench-order-cpu.sh [CRAWLER_BINARY]   (RUNS=N, HOSTS=H, PAGES=P,
# EXTRA="more crawl flags", e.g. EXTRA="--expected-urls 20000")
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
runs=${RUNS:-5}
hosts=${HOSTS:-100}
pages=${PAGES:-10000}
go build -o "$work/serve" ./internal/testweb/serve
crawler=${1:-}
if [ -z "$crawler" ]; then
	go build -o "$work/crawler" ./cmd/crawler
	crawler=$work/crawler
fi
"$work/serve" -hosts "$hosts" -pages "$pages" -seed 1 -seeds "$work/seeds.txt" >"$work/serve.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q ready "$work/serve.out" && break; sleep 0.1; done
grep -q ready "$work/serve.out" || { echo "serve did not start" >&2; exit 1; }
echo "machine: $(nproc) cores, $(git rev-parse --short HEAD), $(date -u +%FT%TZ); web of $hosts hosts, $pages pages; extra flags: ${EXTRA:-none}"
for r in $(seq "$runs"); do
	for order in fifo inlinks; do
		out=$work/out
		rm -rf "$out"
		/usr/bin/time -f "%U %S %e" -o "$work/time" "$crawler" crawl --seeds "$work/seeds.txt" --out "$out" --order "$order" \
			--allow-private --delay -1 --max-depth -1 --progress-interval 0 --concurrency 64 ${EXTRA:-} >/dev/null 2>&1
		n=$(wc -l <"$out/crawl.log.jsonl")
		read -r u s e <"$work/time"
		awk -v o="$order" -v r="$r" -v n="$n" -v u="$u" -v s="$s" -v e="$e" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
			'BEGIN { printf "%s run %s: %d pages, CPU %.2f s, wall %.2f s, %.4f ms/page, load %s\n", o, r, n, u+s, e, 1000*(u+s)/n, l }' | tee -a "$work/runs"
	done
done
for order in fifo inlinks; do
	grep "^$order " "$work/runs" | awk '{ print $(NF-3) }' | sort -n | awk -v o="$order" '{ a[NR] = $1 } END { printf "%s median %.4f ms/page over %d runs\n", o, (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), NR }'
done
