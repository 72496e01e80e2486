#!/usr/bin/env bash
# CPU profile of one crawl of the three documentation sites of docs/bench-realsites.sh
# (same servers and flags, plus --cpuprofile). Usage: docs/profile-realsites.sh BINARY PROFILE_OUT [flags]
# Prints the crawl time, the servers' CPU, the HTML pages and the fetches; KEEP=DIR keeps the crawl;
# NODEJS_API=DIR serves nodejs-doc from DIR, as in docs/bench-realsites.sh.
set -euo pipefail
bin=$1; out=$2; shift 2
work=$(mktemp -d)
servers=()
trap 'kill "${servers[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
sites=(
	"127.0.0.2 8002 /usr/share/doc/python-django-doc/html"
	"127.0.0.4 8004 ${NODEJS_API:-/usr/share/doc/nodejs/api}"
	"127.0.0.5 8005 /usr/share/doc/debian-handbook/html"
)
for s in "${sites[@]}"; do
	read -r addr port dir <<<"$s"
	python3 -m http.server --bind "$addr" -p HTTP/1.0 -d "$dir" "$port" >/dev/null 2>&1 &
	servers+=($!)
	echo "http://$addr:$port/" >>"$work/seeds.txt"
done
for u in $(cat $work/seeds.txt); do for _ in $(seq 50); do curl -sf -o /dev/null "$u" && break; sleep 0.1; done; done
/usr/bin/time -f '%e s wall %U user %S sys %M KB' "$bin" crawl --out "$work/crawl" --delay -1 --allow-private --progress-interval -1 \
	--seeds "$work/seeds.txt" --cpuprofile "$out" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
tail -1 "$work/err"
for p in "${servers[@]}"; do awk '{printf "server cpu %.2f s\n", ($14+$15)/100}' /proc/$p/stat; done
grep -c '"status":200,.*"content_type":"text/html' "$work/crawl/crawl.log.jsonl"
grep -c '"status":' "$work/crawl/crawl.log.jsonl"
if [ -n "${KEEP:-}" ]; then rm -rf "$KEEP"; cp -r "$work/crawl" "$KEEP"; fi
