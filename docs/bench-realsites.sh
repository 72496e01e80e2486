#!/usr/bin/env bash
# Crawler CPU per page, and crawl time against curl, on real documentation
# sites served locally.
#
# Serves three Debian documentation packages with python3 -m http.server on
# loopback addresses (install them first: apt-get install python-django-doc
# nodejs-doc debian-handbook), then alternates, RUNS times:
#   - crawler crawl of the three sites at once, --delay -1 (one fetch per
#     host at a time, no pause), the default WARC and log;
#   - curl fetching the same URLs the crawler fetched: one sequential curl
#     per host (one process given all of the host's URLs, so it reuses a
#     connection where the server allows), the three in parallel.
# It prints each run's wall time and CPU time (user+sys of the process and
# its children), the servers' CPU during each (from /proc/PID/stat: the
# same requests, so it shows how fast the machine was at the time), then
# the medians, CPU per page and the crawl / curl wall-time ratio. The
# crawler's CPU over the servers' during the same crawl changes less
# between runs than either alone: the servers answer the same requests
# each time, so their CPU follows the machine's speed of the moment
# (between 0.96 and 1.54 ms per HTML page for one build in one set on a
# shared VM, while this ratio stayed within 1.32-1.41). Each
# crawl's line ends with its start-up (process start to the first logged
# fetch) and shut-down (end of the last fetch to process exit), from the
# log's fetched_at and duration_ms. The first and last lines are
# internal/tools/machineprobe's: what a system call, a page fault and a
# hand-off between threads cost on this machine, which differ several-fold
# between virtual machines of one kind (docs/BENCHMARKS.md).
#
# Usage: docs/bench-realsites.sh [RUNS] [CRAWLER_BINARY...]
#   RUNS defaults to 5. CRAWLER_BINARY defaults to a build of this tree;
#   give several (an older build, say) to compare them: each run crawls
#   with each in turn, each followed by its curl. PROTO=HTTP/1.1 serves
#   with keep-alive (python's default, HTTP/1.0, closes every connection).
#   NODEJS_API=DIR serves nodejs-doc's pages from DIR (default
#   /usr/share/doc/nodejs/api): installing nodejs-doc replaces a machine's
#   Node.js, `apt-get download nodejs-doc && dpkg -x nodejs-doc_*.deb X`
#   extracts them to X/usr/share/doc/nodejs/api instead.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
PROTO=${PROTO:-HTTP/1.0}
work=$(mktemp -d)
servers=()
trap 'kill "${servers[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

shift || true
go build -o "$work/machineprobe" ./internal/tools/machineprobe
"$work/machineprobe"
crawlers=("$@")
if [ ${#crawlers[@]} -eq 0 ]; then
	go build -o "$work/crawler" ./cmd/crawler
	crawlers=("$work/crawler")
fi
sites=(
	"127.0.0.2 8002 /usr/share/doc/python-django-doc/html"
	"127.0.0.4 8004 ${NODEJS_API:-/usr/share/doc/nodejs/api}"
	"127.0.0.5 8005 /usr/share/doc/debian-handbook/html"
)
seeds=()
for s in "${sites[@]}"; do
	read -r addr port dir <<<"$s"
	test -d "$dir" || { echo "bench: $dir missing (apt-get install python-django-doc nodejs-doc debian-handbook)" >&2; exit 1; }
	python3 -m http.server --bind "$addr" -p "$PROTO" -d "$dir" "$port" >/dev/null 2>&1 &
	servers+=($!)
	seeds+=("http://$addr:$port/")
done
for u in "${seeds[@]}"; do
	for _ in $(seq 50); do curl -sf -o /dev/null "$u" && break; sleep 0.1; done
done
printf '%s\n' "${seeds[@]}" >"$work/seeds.txt" # --seeds: older builds take no seed arguments
echo "sites: ${seeds[*]} ($PROTO); machine: $(nproc) cores"

# cpu prints a process tree's user+sys seconds from time(1)'s output.
cpu() { awk '{printf "%.2f", $2 + $3}' "$1"; }
wall() { awk '{printf "%.2f", $1}' "$1"; }
# srvcpu prints the servers' user+sys seconds so far (fields 14 and 15 of
# /proc/PID/stat, in clock ticks).
tck=$(getconf CLK_TCK)
srvcpu() {
	for p in "${servers[@]}"; do cut -d' ' -f14,15 "/proc/$p/stat"; done |
		awk -v t="$tck" '{s += $1 + $2} END {printf "%.2f", s / t}'
}

for run in $(seq "$RUNS"); do
for crawler in "${crawlers[@]}"; do
	load=$(cut -d' ' -f1 /proc/loadavg)
	rm -rf "$work/crawl"
	s0=$(srvcpu)
	t0=$(date +%s.%N)
	/usr/bin/time -f '%e %U %S %M' -o "$work/time.crawl" \
		"$crawler" crawl --out "$work/crawl" --delay -1 --allow-private --progress-interval -1 \
		--seeds "$work/seeds.txt" >"$work/crawl.out" 2>"$work/crawl.err"
	t1=$(date +%s.%N)
	ends=$(python3 -c '
import datetime, json, sys
first, last = None, None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "fetched_at" not in e:
        continue
    t = datetime.datetime.fromisoformat(e["fetched_at"][:26].rstrip("Z") + "+00:00").timestamp()
    first = t if first is None else min(first, t)
    last = max(last or 0, t + e.get("duration_ms", 0) / 1000)
print("start-up %.3fs, shut-down %.3fs" % (first - float(sys.argv[2]), float(sys.argv[3]) - last))
' "$work/crawl/crawl.log.jsonl" "$t0" "$t1")
	# The URLs the crawler fetched (every log line with a status), per host.
	grep -o '"url":"[^"]*","status":[0-9]*' "$work/crawl/crawl.log.jsonl" |
		sed 's/^"url":"\([^"]*\)".*/\1/' >"$work/urls"
	pages=$(wc -l <"$work/urls")
	html=$(grep -c '"status":200,.*"content_type":"text/html' "$work/crawl/crawl.log.jsonl" || true)
	for s in "${sites[@]}"; do
		read -r addr port _ <<<"$s"
		grep "^http://$addr:$port/" "$work/urls" | sed 's/.*/url = "&"\noutput = "\/dev\/null"/' >"$work/curl.$port"
	done
	s1=$(srvcpu)
	/usr/bin/time -f '%e %U %S %M' -o "$work/time.curl" bash -c '
		for f in "$@"; do curl -s -K "$f" & done; wait' _ "$work"/curl.*
	s2=$(srvcpu)
	printf 'run %d %s (load %s): crawler %6.2fs wall, %6.2fs CPU, %d fetches (%d HTML pages), %.3f ms CPU/fetch, %.3f ms CPU/HTML page, %4.0f MiB peak, WARC %s, servers %.2fs CPU (crawler / servers %.2f) | curl %6.2fs wall, %5.2fs CPU, servers %.2fs CPU | wall ratio %.2f | %s\n' \
		"$run" "$(basename "$crawler")" "$load" "$(wall "$work/time.crawl")" "$(cpu "$work/time.crawl")" "$pages" "$html" \
		"$(echo "1000 * $(cpu "$work/time.crawl") / $pages" | bc -l)" "$(echo "1000 * $(cpu "$work/time.crawl") / $html" | bc -l)" \
		"$(awk '{print $4/1024}' "$work/time.crawl")" "$(du -sh "$work/crawl/warc" | cut -f1)" "$(echo "$s1 - $s0" | bc -l)" \
		"$(echo "$(cpu "$work/time.crawl") / ($s1 - $s0)" | bc -l)" \
		"$(wall "$work/time.curl")" "$(cpu "$work/time.curl")" "$(echo "$s2 - $s1" | bc -l)" \
		"$(echo "$(wall "$work/time.crawl") / $(wall "$work/time.curl")" | bc -l)" "$ends" | tee -a "$work/runs.$(basename "$crawler")"
done
done
median() { sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for crawler in "${crawlers[@]}"; do
	r=$work/runs.$(basename "$crawler")
	echo "$(basename "$crawler"), medians of $RUNS runs: CPU/fetch $(sed 's/.* \([0-9.]*\) ms CPU\/fetch.*/\1/' "$r" | median) ms," \
		"CPU/HTML page $(sed 's/.* \([0-9.]*\) ms CPU\/HTML page.*/\1/' "$r" | median) ms," \
		"crawler wall $(sed 's/.*crawler *\([0-9.]*\)s wall.*/\1/' "$r" | median) s," \
		"curl wall $(sed 's/.*curl *\([0-9.]*\)s wall.*/\1/' "$r" | median) s," \
		"wall ratio $(sed 's/.*wall ratio \([0-9.]*\).*/\1/' "$r" | median)," \
		"crawler / servers CPU $(sed 's/.*(crawler \/ servers \([0-9.]*\)).*/\1/' "$r" | median)," \
		"shut-down $(sed 's/.*shut-down \([0-9.]*\)s.*/\1/' "$r" | median) s"
done
"$work/machineprobe"
