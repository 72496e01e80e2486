#!/usr/bin/env python3
"""Per-host fetch chain of a crawl, from its crawl.log.jsonl (issue #5).

With one request in flight per host, a host's crawl is a chain of fetches:
each fetch takes duration_ms, then a gap passes until the next fetch of the
same host starts (release, hand-off to a worker, robots check, request
set-up). This prints, per host, the chain's span, the sum and median of the
fetch durations and of the gaps, then percentiles over all hosts.
Lines without a fetch (URLs refused by robots.txt) are skipped.

Usage: docs/crawl-gaps.py OUT/crawl.log.jsonl
"""
import json
import statistics
import sys
from datetime import datetime


def pct(xs, p):
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def main(path):
    hosts = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("status", 0) == 0 and r.get("error", "").startswith("robots"):
                continue
            start = datetime.fromisoformat(r["fetched_at"].replace("Z", "+00:00")).timestamp()
            hosts.setdefault(r["url"].split("/")[2], []).append((start, r.get("duration_ms", 0) / 1000))
    gaps, durs = [], []
    for host, fetches in sorted(hosts.items()):
        fetches.sort()
        d = [x[1] for x in fetches]
        g = [fetches[i + 1][0] - (fetches[i][0] + fetches[i][1]) for i in range(len(fetches) - 1)]
        span = fetches[-1][0] + fetches[-1][1] - fetches[0][0]
        print(f"{host}: {len(fetches)} fetches in {span:.3f}s: fetching {sum(d):.3f}s (median {statistics.median(d)*1e3:.2f} ms), "
              f"gaps {sum(g):.3f}s (median {statistics.median(g)*1e3:.2f} ms)")
        gaps += g
        durs += d
    gaps.sort()
    durs.sort()
    for name, xs in (("fetch", durs), ("gap", gaps)):
        print(f"{name} percentiles: " + " ".join(f"p{p} {pct(xs, p)*1e3:.2f} ms" for p in (50, 90, 99))
              + f"; {sum(1 for x in xs if x > 0.002)} over 2 ms, summing to {sum(x for x in xs if x > 0.002):.3f}s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
