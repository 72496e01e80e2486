#!/usr/bin/env bash
# The scale benchmark (docs/BENCHMARKS.md, "Scale"): the crawler on a synthetic web served by
# internal/testweb/serve in its own process, sampled every second by
# internal/tools/scalebench (the crawler's /metrics, /proc/PID), cut into
# tenths of its pages: pages/s, CPU per page, RSS, state and WARC bytes, the
# longest frontier update (Frontier.Done, the insert stalls), checkpoints.
#
# Usage:
#   docs/bench-scale.sh run HOSTS PAGES CONCURRENCY OUT [crawler flags...]
#       one crawl of the web; OUT gets samples.csv, report.md, scale.png/.svg
#   docs/bench-scale.sh colly HOSTS PAGES CONCURRENCY RUNS OUT [-- crawler flags...]
#       the crawler and the colly crawler a colly user would write
#       (internal/tools/collycrawl) on the same web, alternating, RUNS times
#   docs/bench-scale.sh concurrency HOSTS PAGES OUT C1 C2 ... [-- crawler flags...]
#       the crawler at each concurrency, to choose one
#   docs/bench-scale.sh dedup HOSTS PAGES CONCURRENCY RUNS OUT [-- crawler flags...]
#       the exact duplicate check (the default) and --filter-only, one
#       binary, alternating RUNS times; then each run's summary line, its
#       last tenth's pages/s over the first's, and the medians' ratios
#
# BIN=DIR reuses binaries built there (serve, crawler, scalebench,
# collycrawl); CRAWLER=PATH compares another crawler build.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-$(mktemp -d)}
if [ -z "${BIN:-}" ]; then
	trap 'rm -rf "$bin"' EXIT
	go build -o "$bin/serve" ./internal/testweb/serve
	go build -o "$bin/crawler" ./cmd/crawler
	go build -o "$bin/scalebench" ./internal/tools/scalebench
	go build -o "$bin/collycrawl" ./internal/tools/collycrawl
fi
crawler=${CRAWLER:-$bin/crawler}
echo "machine: $(nproc) cores, $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), $(date -u +%FT%TZ)"

mode=$1
shift
case $mode in
run)
	hosts=$1 pages=$2 conc=$3 out=$4
	shift 4
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	"$bin/scalebench" -serve "$bin/serve" -crawler "$crawler" -hosts "$hosts" -pages "$pages" \
		-concurrency "$conc" -out "$out" -- "$@"
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	;;
colly)
	hosts=$1 pages=$2 conc=$3 runs=$4 out=$5
	shift 5
	[ $# -gt 0 ] && [ "$1" = -- ] && shift
	for r in $(seq "$runs"); do
		for who in crawler colly; do
			echo "== run $r: $who (load $(cut -d' ' -f1 /proc/loadavg))"
			rm -rf "$out/$who-$r"
			if [ $who = crawler ]; then
				"$bin/scalebench" -serve "$bin/serve" -crawler "$crawler" -hosts "$hosts" -pages "$pages" \
					-concurrency "$conc" -out "$out/$who-$r" -- "$@" | head -1
			else
				"$bin/scalebench" -serve "$bin/serve" -colly "$bin/collycrawl" -hosts "$hosts" -pages "$pages" \
					-concurrency "$conc" -out "$out/$who-$r" | head -1
			fi
		done
	done
	;;
concurrency)
	hosts=$1 pages=$2 out=$3
	shift 3
	levels=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		levels+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	for c in "${levels[@]}"; do
		echo "== concurrency $c (load $(cut -d' ' -f1 /proc/loadavg))"
		rm -rf "$out/c$c"
		"$bin/scalebench" -serve "$bin/serve" -crawler "$crawler" -hosts "$hosts" -pages "$pages" \
			-concurrency "$c" -out "$out/c$c" -- "$@" | head -1
	done
	;;
dedup)
	hosts=$1 pages=$2 conc=$3 runs=$4 out=$5
	shift 5
	[ $# -gt 0 ] && [ "$1" = -- ] && shift
	for r in $(seq "$runs"); do
		for m in exact filter-only; do
			echo "== run $r: $m (load $(cut -d' ' -f1 /proc/loadavg))"
			rm -rf "$out/$m-$r"
			extra=()
			[ $m = filter-only ] && extra=(--filter-only)
			"$bin/scalebench" -serve "$bin/serve" -crawler "$crawler" -hosts "$hosts" -pages "$pages" \
				-concurrency "$conc" -out "$out/$m-$r" -- "$@" "${extra[@]}" | head -1
			rm -rf "$out/$m-$r/crawl" # tens of GB at 1M pages; report.md and samples.csv stay
		done
	done
	# ms/page, peak RSS, last/first tenth and longest frontier update of each run, medians, ratios.
	for m in exact filter-only; do
		for r in $(seq "$runs"); do
			f=$out/$m-$r/report.md
			printf '%s %s %s %s %s\n' \
				"$(sed -n '1s/.*(\([0-9.]*\) ms\/page).*/\1/p' "$f")" \
				"$(sed -n '1s/.*peak RSS \([0-9]*\) MiB.*/\1/p' "$f")" \
				"$(sed -n "s/^Last tenth's pages\/s over the first's: \([0-9.]*\)\..*/\1/p" "$f")" \
				"$(sed -n '1s/.*longest frontier update \([0-9.]*\) ms.*/\1/p' "$f")" \
				"$(sed -n '1s/.*in \([0-9.]*\) s .*/\1/p' "$f")"
		done >"$out/$m.txt"
	done
	python3 - "$out/exact.txt" "$out/filter-only.txt" <<'PY'
import statistics, sys
cols = ["ms CPU/page", "peak RSS MiB", "last/first tenth pages/s", "longest frontier update ms", "wall s"]
runs = [[list(map(float, l.split())) for l in open(f) if l.strip()] for f in sys.argv[1:]]
med = [[statistics.median(c) for c in zip(*r)] for r in runs]
for i, c in enumerate(cols):
    print("%-28s exact %s (median %.3f) | filter-only %s (median %.3f) | ratio %.3f" % (
        c, ", ".join("%g" % r[i] for r in runs[0]), med[0][i],
        ", ".join("%g" % r[i] for r in runs[1]), med[1][i], med[0][i] / med[1][i]))
PY
	;;
*)
	echo "usage: $0 run|colly|concurrency|dedup ..." >&2
	exit 2
	;;
esac
