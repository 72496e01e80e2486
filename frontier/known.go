package frontier

import "context"

// Known is a URL an earlier crawl fetched, to be checked again.
type Known struct {
	URL   string // as the earlier crawl fetched it; normalized here
	Depth int    // hops from a seed in the earlier crawl
	Hops  string // its hop path there (see Entry.Hops); may be empty
}

// AddKnown queues URLs an earlier crawl fetched, each at its recorded
// depth and hop path, those the seen-set holds excepted. Like seeds they
// skip the scope, depth and trap checks (the earlier crawl admitted them),
// but not Allow and Deny; unlike seeds they do not widen the scope. It
// returns how many were queued. A URL that does not normalize is skipped,
// not an error: the earlier crawl's normalizer may have differed.
func (f *Frontier) AddKnown(ctx context.Context, known []Known) (int, error) {
	defer f.batches.exit(f.batches.enter())
	o := &op{ch: make(chan struct{})}
	for _, k := range known {
		sd, err := f.adm.ParseSeed(k.URL)
		if err != nil {
			continue
		}
		cand, r := f.adm.CheckSeed(sd.URL)
		cand.Depth, cand.Hops = max(k.Depth, 0), k.Hops
		if _, err := f.consider(ctx, o, cand, r); err != nil {
			return 0, err
		}
	}
	if err := f.commit(o); err != nil {
		return 0, err
	}
	return len(o.adds), nil
}
