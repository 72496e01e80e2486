package redisfrontier

import (
	"context"
	"strconv"
	"strings"

	"github.com/layercrawl/layercrawl/frontier"
)

// AddKnown queues URLs an earlier crawl fetched (a recrawl), each at its
// recorded depth and hop path, those the seen-set holds excepted. Like
// seeds they skip the scope, depth and trap checks (the earlier crawl
// admitted them), but not Allow and Deny; unlike seeds they do not widen
// the scope. A URL that does not normalize is skipped, not an error: the
// earlier crawl's normalizer may have differed.
//
// Every worker of a crawl may call it with the same batches, as AddSeeds:
// a batch is queued once (a guard key named by a hash of the batch), and
// a batch whose caller died between the seen-set and the queue is
// completed by the next caller of the same batch, which replays the same
// seen-set answers (within SeenOptions.ResultTTL). Workers given different
// batches still queue each URL at most once, but a URL whose batch died
// half-way is then lost. It returns how many URLs this call queued.
func (f *Frontier) AddKnown(ctx context.Context, known []frontier.Known) (int, error) {
	id, cands := f.knownBatch(known)
	if len(cands) == 0 {
		return 0, nil
	}
	adds, _, dup, err := f.check(ctx, id, cands)
	if err != nil {
		return 0, err
	}
	ok, err := f.commit(ctx, "", "", false, false, 0, dup, f.key("seeded:"+id), stage{}, adds)
	if err != nil || !ok {
		return 0, err
	}
	return len(adds), nil
}

// knownBatch returns the records of the admitted URLs of known and the
// batch's id, the same for the same batch in every worker.
func (f *Frontier) knownBatch(known []frontier.Known) (string, []record) {
	var cands []record
	var list strings.Builder
	for _, k := range known {
		sd, err := f.adm.ParseSeed(k.URL)
		if err != nil {
			continue
		}
		c, r := f.adm.CheckSeed(sd.URL)
		if r != frontier.Admitted {
			continue
		}
		rec := record{URL: c.URL, Depth: max(k.Depth, 0), Hops: k.Hops}
		if len(rec.Hops) > frontier.MaxHopPath {
			rec.Hops = "" // decodeRecord refuses it
		}
		cands = append(cands, rec)
		// The depth and hops are part of the batch: the same URLs at
		// other depths are another batch.
		list.WriteString(rec.URL)
		list.WriteByte(' ')
		list.WriteString(strconv.Itoa(rec.Depth))
		list.WriteByte(' ')
		list.WriteString(rec.Hops)
		list.WriteByte('\n')
	}
	return "known-" + strconv.FormatUint(fnv64(list.String()), 36), cands
}
