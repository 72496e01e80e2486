#!/usr/bin/env bash
# The exact duplicate check (the default) against --filter-only on the real
# documentation sites: one crawler binary, the two modes alternated RUNS
# times (exact first), all four sites crawled at once with --delay -1.
#
# Sites (Debian packages; apt-get install rust-doc debian-handbook
# python-django-doc nodejs-doc): rust-doc (32,000 HTML pages) and
# debian-handbook served by Debian's nginx (its own configuration, as
# internal/nginxtest writes it: gzip, keep-alive, ETag; directory listings
# on, as python's server lists them: debian-handbook's root is one directory
# per language), python-django-doc
# and nodejs-doc by python3 -m http.server (HTTP/1.0, a connection per
# request). Each run prints wall time, CPU (user+sys of the crawler, from
# time(1)), CPU per fetch, peak RSS, the pages/s of the first and last
# tenth of the fetches (from the log's fetched_at and duration_ms: a tenth
# of the fetches over the time from the previous tenth's last completion to
# its own; all ten tenths follow), start-up (process start to the first
# fetch) and shut-down (last fetch's end to exit), and the crawl's
# duplicate-filter lines; then each mode's medians
# and exact / filter-only.
#
# Usage: docs/bench-dedup-realsites.sh [RUNS] [CRAWLER_BINARY] [-- crawl flags...]
#   RUNS defaults to 3. ADDR=127.0.0 PORT=8100 choose the listeners
#   (ADDR.2-ADDR.5, ports PORT+2 to PORT+5). KEEP=DIR keeps the runs' logs;
#   PROFILE=DIR writes each run's CPU profile there (--cpuprofile);
#   FIRST=filter-only runs that mode first in each pair. NODEJS_API=DIR
#   serves nodejs-doc from DIR, as in docs/bench-realsites.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
shift || true
crawler=
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	crawler=$1
	shift
fi
[ $# -gt 0 ] && [ "$1" = -- ] && shift
ADDR=${ADDR:-127.0.0}
PORT=${PORT:-8100}
NGINX=${NGINX:-/usr/sbin/nginx}
work=$(mktemp -d)
servers=()
trap 'kill "${servers[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -z "$crawler" ]; then
	go build -o "$work/crawler" ./cmd/crawler
	crawler=$work/crawler
fi

nginx_sites=(
	"$ADDR.2 $((PORT + 2)) /usr/share/doc/rust-doc/html"
	"$ADDR.3 $((PORT + 3)) /usr/share/doc/debian-handbook/html"
)
python_sites=(
	"$ADDR.4 $((PORT + 4)) /usr/share/doc/python-django-doc/html"
	"$ADDR.5 $((PORT + 5)) ${NODEJS_API:-/usr/share/doc/nodejs/api}"
)
seeds=()
mkdir -p "$work/nginx/tmp"
{
	cat <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 256; }
http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	access_log off;
	client_body_temp_path $work/nginx/tmp/body;
	proxy_temp_path $work/nginx/tmp/proxy;
	fastcgi_temp_path $work/nginx/tmp/fastcgi;
	uwsgi_temp_path $work/nginx/tmp/uwsgi;
	scgi_temp_path $work/nginx/tmp/scgi;
	keepalive_timeout 30s;
	keepalive_requests 1000;
	gzip on;
	gzip_types text/css text/plain application/javascript application/json image/svg+xml;
	gzip_min_length 1;
	gzip_vary on;
	etag on;
EOF
	for s in "${nginx_sites[@]}"; do
		read -r addr port dir <<<"$s"
		echo "	server { listen $addr:$port; root $dir; autoindex on; }"
	done
	echo "}"
} >"$work/nginx/nginx.conf"
for s in "${nginx_sites[@]}" "${python_sites[@]}"; do
	read -r addr port dir <<<"$s"
	test -d "$dir" || { echo "bench: $dir missing (apt-get install rust-doc debian-handbook python-django-doc nodejs-doc)" >&2; exit 1; }
	seeds+=("http://$addr:$port/")
done
"$NGINX" -c "$work/nginx/nginx.conf" -p "$work/nginx" &
servers+=($!)
for s in "${python_sites[@]}"; do
	read -r addr port dir <<<"$s"
	python3 -m http.server --bind "$addr" -d "$dir" "$port" >/dev/null 2>&1 &
	servers+=($!)
done
for u in "${seeds[@]}"; do
	for _ in $(seq 50); do curl -sf -o /dev/null "$u" && break; sleep 0.1; done
	curl -sf -o /dev/null "$u" || { echo "bench: $u does not answer" >&2; exit 1; }
done
printf '%s\n' "${seeds[@]}" >"$work/seeds.txt"
echo "sites: ${seeds[*]}; machine: $(nproc) cores, $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), $(date -u +%FT%TZ)"

modes=(exact filter-only)
[ "${FIRST:-exact}" = filter-only ] && modes=(filter-only exact)
for run in $(seq "$RUNS"); do
	for mode in "${modes[@]}"; do
		flags=()
		[ "$mode" = filter-only ] && flags=(--filter-only)
		[ -n "${PROFILE:-}" ] && mkdir -p "$PROFILE" && flags+=(--cpuprofile "$PROFILE/cpu-$run-$mode.pprof")
		load=$(cut -d' ' -f1 /proc/loadavg)
		rm -rf "$work/crawl"
		t0=$(date +%s.%N)
		/usr/bin/time -f '%e %U %S %M' -o "$work/time" \
			"$crawler" crawl --out "$work/crawl" --delay -1 --allow-private --progress-interval -1 \
			--seeds "$work/seeds.txt" "${flags[@]}" "$@" >"$work/crawl.out" 2>"$work/crawl.err" ||
			{ tail -5 "$work/crawl.err" >&2; exit 1; }
		t1=$(date +%s.%N)
		line=$(python3 - "$work/crawl/crawl.log.jsonl" "$work/time" "$t0" "$t1" <<'PY'
import datetime, json, sys
ends = []
first = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "fetched_at" not in e or "status" not in e:
        continue
    t = datetime.datetime.fromisoformat(e["fetched_at"][:26].rstrip("Z") + "+00:00").timestamp()
    first = t if first is None else min(first, t)
    ends.append(t + e.get("duration_ms", 0) / 1000)
ends.sort()
n = len(ends)
cut = [ends[(i * n) // 10 - 1] if i else first for i in range(11)]
rate = [((i + 1) * n // 10 - i * n // 10) / max(cut[i + 1] - cut[i], 1e-9) for i in range(10)]
wall, user, sys_, rss = open(sys.argv[2]).read().split()
cpu = float(user) + float(sys_)
print("%s %.2f %d %.4f %.0f %.1f %.1f %.3f %.3f %.3f %s" % (wall, cpu, n, 1000 * cpu / n, int(rss) / 1024, rate[0], rate[9], rate[9] / rate[0],
      first - float(sys.argv[3]), float(sys.argv[4]) - ends[-1], "/".join("%.0f" % r for r in rate)))
PY
)
		echo "$line" >>"$work/runs.$mode"
		read -r wall cpu n ms rss r1 r10 rr up down tenths <<<"$line"
		printf 'run %d %-11s (load %s): %6.2fs wall, %6.2fs CPU, %d fetches, %.4f ms CPU/fetch, %4.0f MiB peak, first tenth %.1f pages/s, last %.1f (%.3f), start-up %.3fs, shut-down %.3fs, tenths %s | %s | %s\n' \
			"$run" "$mode" "$load" "$wall" "$cpu" "$n" "$ms" "$rss" "$r1" "$r10" "$rr" "$up" "$down" "$tenths" \
			"$(cat "$work/crawl.out" "$work/crawl.err" | grep -o 'duplicate filter .*' | tr -s ' ')" "$(cat "$work/crawl.out" "$work/crawl.err" | grep -o 'pages lost .*' | tr -s ' ')"
		if [ -n "${KEEP:-}" ]; then
			mkdir -p "$KEEP"
			cat "$work/crawl.out" "$work/crawl.err" >"$KEEP/crawl-$run-$mode.txt"
		fi
	done
done
python3 - "$work/runs.exact" "$work/runs.filter-only" <<'PY'
import statistics, sys
cols = [(0, "wall s"), (3, "CPU ms/fetch"), (4, "peak RSS MiB"), (5, "first tenth pages/s"), (6, "last tenth pages/s"), (7, "last/first"), (8, "start-up s"), (9, "shut-down s")]
runs = [[list(map(float, l.split()[:10])) for l in open(f)] for f in sys.argv[1:]]
for i, name in cols:
    a = [r[i] for r in runs[0]]
    b = [r[i] for r in runs[1]]
    ma, mb = statistics.median(a), statistics.median(b)
    print("%-20s exact %s (median %g) | filter-only %s (median %g) | exact / filter-only %.3f" % (
        name, ", ".join("%g" % x for x in a), ma, ", ".join("%g" % x for x in b), mb, ma / mb))
PY
