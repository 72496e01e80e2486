#!/usr/bin/env bash
# Crawler vs wget -r on the same local static site (issue #5 performance).
#
# Serves a generated 3-host site (internal/testsite, PAGES pages) from a
# separate process on loopback (-plain: no host spellings wget cannot
# resolve to 127.0.0.1), then crawls it with wget -r and with
# "crawler crawl --delay -1", RUNS times each, alternating, and prints wall
# time, peak RSS and the set of pages each reached.
#
# Usage: docs/bench-crawl.sh [PAGES] [RUNS]     (defaults 4400 and 3)
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-4400}
RUNS=${2:-3}
PORTS=${PORTS:-18081,18082,18083}
command -v wget >/dev/null || { echo "bench: wget missing (apt-get install -y wget)" >&2; exit 1; }

work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/crawler" ./cmd/crawler
go build -o "$work/serve" ./internal/testsite/serve

"$work/serve" -pages "$PAGES" -ports "$PORTS" -plain >"$work/serve.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q '^ready' "$work/serve.out" && break; sleep 0.1; done
read -r _ roots <"$work/serve.out"
printf '%s\n' $roots >"$work/seeds.txt"
echo "site: $PAGES pages on $(echo $roots | wc -w) hosts: $roots"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# pages lists the site pages (host:port/dN/pM.html) a run reached with 200.
# wget_pages lists the pages wget downloaded, from its log's final URLs
# (wget saves a redirected page under the redirecting URL's name); a page
# fetched under the spelling /d0/%70N.html is page /d0/pN.html.
wget_pages() {
	sed -n 's|.* URL:http://\([^ ]*\) .*|\1|p' "$1" | sed 's|/%70\([0-9]*\.html\)$|/p\1|' |
		grep -E '/d[0-9]+/p[0-9]+\.html$' | sort -u
}
crawler_pages() {
	grep '"status":200' "$1/crawl.log.jsonl" | sed -n 's|.*"url":"http://\([^"]*/d[0-9]*/p[0-9]*\.html\)".*|\1|p' | sort -u
}

for run in $(seq "$RUNS"); do
	rm -rf "$work/wget" "$work/crawl"
	/usr/bin/time -f '%e %M %U %S' -o "$work/time.wget" \
		wget -r -l inf -H -D 127.0.0.1 -nv -e robots=on -P "$work/wget" $roots 2>"$work/wget.log" || true
	/usr/bin/time -f '%e %M %U %S' -o "$work/time.crawler" \
		"$work/crawler" crawl --seeds "$work/seeds.txt" --out "$work/crawl" --delay -1 --allow-private \
		--progress-interval -1 >"$work/crawler.out" 2>"$work/crawler.err"
	wget_pages "$work/wget.log" >"$work/pages.wget"
	crawler_pages "$work/crawl" >"$work/pages.crawler"
	# time(1) prepends "Command exited with non-zero status" when wget
	# reports the site's 404s (exit 8): keep the last line.
	read -r wt wm wu ws < <(tail -1 "$work/time.wget")
	read -r ct cm cu cs < <(tail -1 "$work/time.crawler")
	same=no
	cmp -s "$work/pages.wget" "$work/pages.crawler" && same=yes
	printf 'run %d: wget %6.2fs (CPU %.2fs) %6.1f MiB peak RSS, %d pages, %d requests | crawler %6.2fs (CPU %.2fs) %6.1f MiB peak RSS, %d pages, %d log lines | speed-up %.1fx | same page set: %s\n' \
		"$run" "$wt" "$(echo "$wu+$ws" | bc -l)" "$(echo "$wm/1024" | bc -l)" "$(wc -l <"$work/pages.wget")" "$(grep -c ' URL:' "$work/wget.log" || true)" \
		"$ct" "$(echo "$cu+$cs" | bc -l)" "$(echo "$cm/1024" | bc -l)" "$(wc -l <"$work/pages.crawler")" "$(wc -l <"$work/crawl/crawl.log.jsonl")" \
		"$(echo "$wt/$ct" | bc -l)" "$same"
	if [ "$same" = no ]; then diff "$work/pages.wget" "$work/pages.crawler" | head -5 || true; fi
done
echo "wget: $(wget --version | head -1)"
