package experiments

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Filter is what the runner measures: a set of URLs answering membership
// queries with possible false positives and no false negatives.
type Filter interface {
	Add(url string)
	Test(url string) bool
}

// Structure describes one measured structure and builds fresh instances.
type Structure struct {
	Name            string
	Layers          int     // filter layers excluding the integrity layer; 0 for a classic filter
	Hashes          int     // hash functions per layer
	BitsTotal       uint64  // memory of the bit arrays, all layers together
	ProbesPerInsert float64 // mean bits set by one insertion (and probed by a query answering "present")
	// New returns an empty filter.
	New func() (Filter, error)
	// Key maps a URL to the key the structure actually stores, when two
	// different strings can be the same key (the multi-layer filters drop
	// the scheme); nil means the exact string. KeyName identifies Key so
	// that structures sharing one share its ground truth.
	Key     func(url string) string
	KeyName string
	// Theory is the predicted false-positive rate of a non-member query
	// after n insertions: formula (1) for a classic filter, formula (4)
	// for the multi-layer filter.
	Theory func(n uint64) float64
}

// Workload names, as written in the CSV.
const (
	// WorkloadURLID is the paper's: every inserted URL is queried with its
	// unique ID appended.
	WorkloadURLID = "url+id"
	// WorkloadHoldout queries real URLs of the same sources that were
	// never inserted.
	WorkloadHoldout = "holdout"
)

// Sweep names, as written in the sweep column of the CSV.
const (
	// SweepCheckpoints marks the rows of the n sweep: one filter per
	// structure at its fixed memory, measured at each checkpoint n, so bits
	// per URL moves only because n does. The zero Row.Sweep means this.
	SweepCheckpoints = "n"
	// SweepMemory marks the rows of the memory sweep: n fixed (Plan.SweepN)
	// and every structure rebuilt at each total memory of bits per URL
	// times n.
	SweepMemory = "bits"
)

// Row is one measurement: a structure, a workload and a checkpoint n, in
// the n sweep or the memory sweep.
type Row struct {
	Workload        string
	Structure       string
	N               int
	Layers          int
	Hashes          int
	BitsTotal       uint64
	BitsPerURL      float64
	Queries         int64 // queries counted (true members excluded)
	FalsePositives  int64
	FPRate          float64
	TheoryFPRate    float64
	InsertNsPerURL  float64 // mean over the first n insertions
	QueryNsPerURL   float64 // mean over this checkpoint's queries of this workload
	ExcludedMembers int64   // queries whose key is an inserted URL's key (true members), not counted
	ProbesPerInsert float64
	Seed            uint64
	Sweep           string // SweepCheckpoints ("" reads as it) or SweepMemory
}

// IsMemorySweep reports whether r belongs to the memory sweep.
func (r Row) IsMemorySweep() bool { return r.Sweep == SweepMemory }

// RunOptions configures Run.
type RunOptions struct {
	// Parallel is how many structures are measured at once; default 1,
	// which keeps the timings free of interference. 2 halves the wall
	// time on a 2-core machine at the cost of noisier timings.
	Parallel int
	// Progress, if not nil, is advanced as work is done.
	Progress *Progress
	// Seed is copied into every row.
	Seed uint64
	// Sweep is copied into every row: SweepCheckpoints (the default) or
	// SweepMemory.
	Sweep string
}

// Work is the number of operations (insertions plus queries) Run will do
// for one structure on plan p, the unit of the progress bar.
func (p *Plan) Work() int64 {
	last := p.Checkpoints[len(p.Checkpoints)-1]
	w := int64(last)
	for _, n := range p.Checkpoints {
		w += int64(n) + int64(len(p.Holdout))
	}
	return w
}

// Run measures every structure on the plan: one insertion pass per
// structure, up to each checkpoint n in turn; at each checkpoint both
// workloads query the filter, which queries never change, so the filter
// holds exactly Insert[:n] while the checkpoint is measured. The rows come
// back in structure order, then checkpoint order, then workload order
// (url+id, holdout), whatever Parallel is. The counts are deterministic for
// a plan; the timings are wall-clock measurements.
func Run(ctx context.Context, p *Plan, structures []Structure, opts RunOptions) ([]Row, error) {
	par := opts.Parallel
	if par <= 0 {
		par = 1
	}
	// Ground truth per key function, computed before any timing.
	truth := make(map[string]*Membership)
	for _, s := range structures {
		if _, ok := truth[s.KeyName]; !ok {
			truth[s.KeyName] = p.Membership(s.Key)
		}
	}
	results := make([][]Row, len(structures))
	errs := make([]error, len(structures))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range structures {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = runOne(ctx, p, truth[structures[i].KeyName], structures[i], opts)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rows []Row
	for _, r := range results {
		rows = append(rows, r...)
	}
	return rows, nil
}

// checkEvery is how many operations pass between cancellation checks and
// progress updates.
const checkEvery = 1 << 14

func runOne(ctx context.Context, p *Plan, truth *Membership, s Structure, opts RunOptions) ([]Row, error) {
	label := s.Name
	if opts.Sweep == SweepMemory && len(p.Checkpoints) > 0 {
		label = fmt.Sprintf("%s at %.3g bits/URL", s.Name, float64(s.BitsTotal)/float64(p.Checkpoints[0]))
	}
	opts.Progress.SetLabel(label)
	f, err := s.New()
	if err != nil {
		return nil, fmt.Errorf("experiments: build %s: %w", s.Name, err)
	}
	var rows []Row
	inserted := 0
	var insertTime time.Duration
	base := Row{
		Structure: s.Name, Layers: s.Layers, Hashes: s.Hashes, BitsTotal: s.BitsTotal,
		ProbesPerInsert: s.ProbesPerInsert, Seed: opts.Seed, Sweep: opts.Sweep,
	}
	if base.Sweep == "" {
		base.Sweep = SweepCheckpoints
	}
	for _, n := range p.Checkpoints {
		// Insert up to n, in slices between cancellation checks.
		for inserted < n {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			end := min(n, inserted+checkEvery)
			batch := p.Insert[inserted:end]
			start := time.Now()
			for _, u := range batch {
				f.Add(u)
			}
			insertTime += time.Since(start)
			opts.Progress.Add(int64(len(batch)))
			inserted = end
		}
		theory := s.Theory(uint64(n))
		row := base
		row.N = n
		row.BitsPerURL = float64(s.BitsTotal) / float64(n)
		row.TheoryFPRate = theory
		row.InsertNsPerURL = float64(insertTime.Nanoseconds()) / float64(n)

		// url+id: every inserted URL with its ID appended.
		var fp int64
		var queryTime time.Duration
		for lo := 0; lo < n; lo += checkEvery {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			hi := min(n, lo+checkEvery)
			qs := p.IDQueries[lo:hi]
			start := time.Now()
			for i, q := range qs {
				if f.Test(q) {
					// A query equal to an already inserted URL is a true
					// positive, not a false one (counted below).
					if m := truth.ID[lo+i]; m < 0 || int(m) >= n {
						fp++
					}
				}
			}
			queryTime += time.Since(start)
			opts.Progress.Add(int64(len(qs)))
		}
		excluded := Members(truth.ID[:n], n)
		r := row
		r.Workload = WorkloadURLID
		r.Queries = int64(n) - excluded
		r.FalsePositives = fp
		r.ExcludedMembers = excluded
		r.FPRate = rate(fp, r.Queries)
		r.QueryNsPerURL = float64(queryTime.Nanoseconds()) / float64(n)
		rows = append(rows, r)

		// holdout: real URLs never inserted.
		fp, queryTime = 0, 0
		for lo := 0; lo < len(p.Holdout); lo += checkEvery {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			qs := p.Holdout[lo:min(len(p.Holdout), lo+checkEvery)]
			start := time.Now()
			for i, q := range qs {
				if f.Test(q) {
					if m := truth.Holdout[lo+i]; m < 0 || int(m) >= n {
						fp++
					}
				}
			}
			queryTime += time.Since(start)
			opts.Progress.Add(int64(len(qs)))
		}
		if len(p.Holdout) > 0 {
			r = row
			r.Workload = WorkloadHoldout
			excluded := Members(truth.Holdout, n)
			r.Queries = int64(len(p.Holdout)) - excluded
			r.FalsePositives = fp
			r.ExcludedMembers = excluded
			r.FPRate = rate(fp, r.Queries)
			r.QueryNsPerURL = float64(queryTime.Nanoseconds()) / float64(len(p.Holdout))
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func rate(k, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}
