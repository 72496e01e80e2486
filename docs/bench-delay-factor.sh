#!/usr/bin/env bash
# The adaptive politeness delay factor against the crawl's fetch rate and
# the share of time the host spends answering it (docs/RESILIENCE.md,
# "Choosing the default factor"). Serve the Django documentation first:
#   python3 -m http.server --bind 127.0.0.2 -d /usr/share/doc/python-django-doc/html 8002
# Usage: CRAWLER=path/to/crawler docs/bench-delay-factor.sh
set -euo pipefail
for run in 1 2 3; do
for f in -1 1 2 5; do
  rm -rf /tmp/fac
  start=$(date +%s.%N)
  "${CRAWLER:-crawler}" crawl --out /tmp/fac --delay 1ms --delay-factor $f --max-pages 600 --allow-private --progress-interval -1 --no-embeds --near-duplicate-threshold -1 http://127.0.0.2:8002/ >/dev/null 2>&1
  end=$(date +%s.%N)
  python3 - "$f" "$start" "$end" <<'PY'
import json,sys
f,start,end=sys.argv[1],float(sys.argv[2]),float(sys.argv[3])
d=0;n=0
for line in open('/tmp/fac/crawl.log.jsonl'):
    e=json.loads(line)
    if e.get('status'):
        d+=e.get('duration_ms',0);n+=1
wall=end-start
print(f"factor {f:>3}: {n} fetches in {wall:.2f}s ({n/wall:.0f}/s), server busy with this crawl {d/1000/wall*100:.0f}% of the time, mean response {d/n:.2f} ms")
PY
done; done
