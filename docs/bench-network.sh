#!/usr/bin/env bash
# The crawl benchmark on a network in miniature (internal/tools/netbench):
# every host behind its own toxiproxy proxy on its own loopback address,
# with a round-trip time, jitter and a bandwidth cap. The crawler builds
# and its peers (wget, Scrapy, a colly crawler), all held to one request in
# flight per host, are run in turn, run after run, and the medians printed.
#
# Usage: docs/bench-network.sh [OUT]          (default OUT: /tmp/bench-network)
#
# Environment:
#   RUNS=3                    runs of each crawler in each scenario
#   SCENARIOS="a b docs"      which scenarios (see below)
#   CRAWLERS="label=BIN ..."  crawler binaries to compare; default: this
#                             checkout's ./cmd/crawler as "crawler"
#   PEERS="wget scrapy colly" which peers (Debian's wget and python3-scrapy)
#   BASELINE=LABEL            the label the others' wall times are divided
#                             by (default: the first of CRAWLERS)
#
# Scenarios:
#   a     100 synthetic hosts (3,000 content pages, at most 60 a host),
#         50 ms round trip, 5 ms jitter, 1,000 KB/s per connection, no
#         politeness delay (crawler --delay -1), 16 requests in flight;
#         ideal: each host's answers back to back, hosts on 16 slots.
#   b     100 synthetic hosts (2,000 pages, at most 30 a host), round trips
#         of 20-50 ms, the default politeness (1 s after each response);
#         ideal: what the delays allow.
#   docs  the Debian documentation of Django (python-django-doc), Node.js
#         (nodejs-doc) and the Rust book (rust-doc), one host each, 50 ms,
#         2,000 KB/s, no politeness delay.
#
# The crawlers fetch no page requisites (crawler --no-embeds, wget -R on
# their extensions; Scrapy's and colly's link extractors take only links),
# so that every tool fetches pages. Scrapy gets the scheduler its docs
# recommend for broad crawls (DownloaderAwarePriorityQueue): with the
# default one, requests queued for busy hosts hold its 16 slots. The CPU
# figures are spent on loopback; the wall times are the emulated network's.
# Needs: go, wget, python3-scrapy (/usr/bin/scrapy), and for docs the three
# doc packages.
set -euo pipefail

OUT=${1:-/tmp/bench-network}
RUNS=${RUNS:-3}
SCENARIOS=${SCENARIOS:-"a b docs"}
PEERS=${PEERS-"wget scrapy colly"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/bin" "$OUT/logs"
RESULTS=$OUT/results.tsv

(cd "$ROOT" && go build -o "$OUT/bin/netbench" ./internal/tools/netbench)
NB=$OUT/bin/netbench
if [ -z "${CRAWLERS:-}" ]; then
	(cd "$ROOT" && go build -o "$OUT/bin/crawler" ./cmd/crawler)
	CRAWLERS="crawler=$OUT/bin/crawler"
fi
BASELINE=${BASELINE:-${CRAWLERS%%=*}}

cat >"$OUT/bin/netbench_spider.py" <<'EOF'
# Scrapy's CrawlSpider following every link from the seeds netbench names.
import os

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class NetbenchSpider(CrawlSpider):
    name = "netbench"
    start_urls = open(os.environ["NETBENCH_SEEDS"]).read().split()
    rules = (Rule(LinkExtractor(), follow=True),)
EOF

REJECT='*.css,*.js,*.png,*.jpg,*.jpeg,*.gif,*.svg,*.ico,*.woff,*.woff2,*.ttf'

# crawl_cmd LABEL SCENARIO prints the shell command that crawls once.
crawl_cmd() {
	local label=$1 scenario=$2 delay=0 cdelay="--delay -1" wwait="" slots=16
	# At the default politeness a host waits 1 s after each answer. The
	# crawler and colly count only requests in flight against their 16;
	# a wget process and a Scrapy request waiting out a host's delay hold
	# one of theirs, so there they get one per host (100), which the
	# delay, not the cap, then bounds.
	if [ "$scenario" = b ]; then delay=1; cdelay=""; wwait="--wait=1"; slots=100; fi
	local log="$OUT/logs/$label-$scenario.log"
	case $label in
	wget)
		# One wget per host, $slots at a time; -r stays on the seed's host.
		# Exit 8 is a 404 among the pages, which is no failure here.
		echo "xargs -P $slots -n 1 sh -c 'wget -r -l inf -nd --delete-after -q -e robots=on $wwait -R \"$REJECT\" -P \"\$NETBENCH_DIR/\$(echo \"\$1\" | cut -d/ -f3)\" \"\$1\"; s=\$?; [ \$s = 0 ] || [ \$s = 8 ]' _ <\"\$NETBENCH_SEEDS\" >$log 2>&1" ;;
	scrapy)
		echo "cd \"\$NETBENCH_DIR\" && /usr/bin/scrapy runspider $OUT/bin/netbench_spider.py -s CONCURRENT_REQUESTS=$slots -s CONCURRENT_REQUESTS_PER_DOMAIN=1 -s CONCURRENT_REQUESTS_PER_IP=0 -s DOWNLOAD_DELAY=$delay -s RANDOMIZE_DOWNLOAD_DELAY=False -s ROBOTSTXT_OBEY=True -s DEPTH_LIMIT=0 -s SCHEDULER_PRIORITY_QUEUE=scrapy.pqueues.DownloaderAwarePriorityQueue -s TELNETCONSOLE_ENABLED=False -s LOG_LEVEL=INFO >$log 2>&1" ;;
	colly)
		echo "$NB colly -concurrency 16 -delay ${delay}s >$log 2>&1" ;;
	*)
		local bin
		for c in $CRAWLERS; do [ "${c%%=*}" = "$label" ] && bin=${c#*=}; done
		echo "$bin crawl --seeds \"\$NETBENCH_SEEDS\" --out \"\$NETBENCH_DIR/crawl\" --allow-private --no-embeds --concurrency 16 $cdelay >$log 2>&1" ;;
	esac
}

net_flags() {
	case $1 in
	a) echo "-hosts 100 -pages 3000 -max-host-pages 60 -rtt 50ms -jitter 5ms -rate 1000 -concurrency 16" ;;
	b) echo "-hosts 100 -pages 2000 -max-host-pages 30 -rtt 20ms -rtt-max 50ms -jitter 5ms -rate 1000 -concurrency 16 -delay 1s" ;;
	docs) echo "-hosts 0 -docs django=/usr/share/doc/python-django-doc/html,nodejs=/usr/share/doc/nodejs/api,rustbook=/usr/share/doc/rust-doc/html/book -rtt 50ms -jitter 5ms -rate 2000 -concurrency 16" ;;
	*) echo "bench-network: unknown scenario $1" >&2; exit 2 ;;
	esac
}

labels=""
for c in $CRAWLERS; do labels="$labels ${c%%=*}"; done
labels="$labels $PEERS"
read -r -a tools <<<"$labels"

{
	echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# crawlers: $CRAWLERS; peers: $PEERS; runs: $RUNS"
} >>"$OUT/machine.txt"

for scenario in $SCENARIOS; do
	for run in $(seq 1 "$RUNS"); do
		# Rotate the order each run, so that no tool always goes first.
		n=${#tools[@]}
		for i in $(seq 0 $((n - 1))); do
			label=${tools[$(((i + run - 1) % n))]}
			# shellcheck disable=SC2046
			"$NB" run $(net_flags "$scenario") -scenario "$scenario" -label "$label" \
				-results "$RESULTS" -timeout 15m -- sh -c "$(crawl_cmd "$label" "$scenario")" ||
				echo "bench-network: $scenario $label run $run failed" >&2
		done
	done
done
"$NB" summarize -baseline "$BASELINE" "$RESULTS"
