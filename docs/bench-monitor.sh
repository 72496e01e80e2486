#!/usr/bin/env bash
# Cost of the monitor: the same local crawl with --http-addr
# off, on, and on with a Prometheus-like scraper that GETs /metrics and
# /status.json every second; RUNS rounds, the three modes alternating
# within each round. Prints wall time, CPU (user+sys) and pages per run,
# then per mode the medians of pages/s and of CPU per page.
#
# Usage: docs/bench-monitor.sh [PAGES] [RUNS]     (defaults 20000 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-20000}
RUNS=${2:-5}
PORTS=${PORTS:-18391,18392,18393}
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:18394}
command -v curl >/dev/null || { echo "bench: curl missing" >&2; exit 1; }

work=$(mktemp -d)
server=
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/crawler" ./cmd/crawler
go build -o "$work/serve" ./internal/testsite/serve
"$work/serve" -pages "$PAGES" -ports "$PORTS" -plain >"$work/serve.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q '^ready' "$work/serve.out" && break; sleep 0.1; done
read -r _ roots <"$work/serve.out"
printf '%s\n' $roots >"$work/seeds.txt"
echo "site: $PAGES pages on $(echo $roots | wc -w) hosts; machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# scrape polls the status server every second until killed, like a
# Prometheus scrape plus an open status page.
scrape() {
	while :; do
		curl -s -o /dev/null "http://$HTTP_ADDR/metrics" || true
		curl -s -o /dev/null "http://$HTTP_ADDR/status.json" || true
		sleep 1
	done
}

results="$work/results"
for run in $(seq "$RUNS"); do
	for mode in off on scraped; do
		rm -rf "$work/crawl"
		extra=()
		[ "$mode" != off ] && extra=(--http-addr "$HTTP_ADDR")
		scraper=
		if [ "$mode" = scraped ]; then
			scrape &
			scraper=$!
		fi
		/usr/bin/time -f '%e %U %S' -o "$work/time" \
			"$work/crawler" crawl --seeds "$work/seeds.txt" --out "$work/crawl" --delay -1 --allow-private \
			--progress-interval -1 "${extra[@]}" >"$work/crawler.out" 2>"$work/crawler.err"
		[ -n "$scraper" ] && { kill "$scraper"; wait "$scraper" 2>/dev/null || true; }
		read -r wall user sys <"$work/time"
		pages=$(sed -n 's/^  pages fetched *\([0-9]*\) .*/\1/p' "$work/crawler.out")
		printf 'run %d %-8s wall %6.2fs CPU %6.2fs pages %d  %7.1f pages/s  %6.1f us CPU/page\n' "$run" "$mode" "$wall" \
			"$(echo "$user+$sys" | bc -l)" "$pages" "$(echo "$pages/$wall" | bc -l)" "$(echo "($user+$sys)*1000000/$pages" | bc -l)"
		echo "$mode $(echo "$pages/$wall" | bc -l) $(echo "($user+$sys)*1000000/$pages" | bc -l)" >>"$results"
	done
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for mode in off on scraped; do
	pps=$(awk -v m="$mode" '$1==m {print $2}' "$results" | median)
	cpu=$(awk -v m="$mode" '$1==m {print $3}' "$results" | median)
	printf 'median %-8s %7.1f pages/s  %6.1f us CPU/page\n' "$mode" "$pps" "$cpu"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
