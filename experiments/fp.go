package experiments

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/layercrawl/layercrawl/mlbf"
)

// FPConfig configures RunFP, the whole false-positive experiment.
type FPConfig struct {
	Sources    []Source
	Read       ReadOptions
	Plan       PlanOptions
	Structures []string // names; default AllStructures
	// Filters are Layers, Hashes, Bits and Segment; Sample and MaxN are
	// set by RunFP. Bits 0 sizes m from the dataset (BitsForDataset at the
	// largest n measured) instead of the paper's fixed m.
	Filters StructureOptions
	// BitsPerURL are the sizes of the memory sweep, run at n =
	// Plan.SweepN (see BuildSweepStructures); none skips it, and the FP vs
	// bits per URL figures are then absent. The command line defaults to
	// DefaultBitsPerURL.
	BitsPerURL []float64
	// SegmenterName describes Filters.Segment in the report; default
	// "mlbf.SplitURL (the paper's plain split)".
	SegmenterName string
	Parallel      int
	OutDir        string    // created if missing
	Command       string    // the command line, for the report
	Progress      io.Writer // where the progress bar is drawn; nil for none
	// Log receives one-line notes (requested n values that do not exist,
	// files written); nil discards them.
	Log io.Writer
}

// DefaultBitsPerURL are the memory sweep's sizes when none are given on
// the command line: from where a k = 3 classic filter misses a few percent
// of new URLs to where the best structures show no false positive in a
// million queries.
var DefaultBitsPerURL = []float64{4, 6, 8, 10, 12, 16, 20, 24, 32}

// DatasetFPRate is the false-positive rate the classic filter (bf, k
// hashes, m bits) reaches at the largest n measured when m is sized from
// the dataset: high enough that a holdout of a few thousand URLs counts
// some false positives, so that every structure's curve has points to
// compare.
const DatasetFPRate = 0.01

// BitsForDataset returns the layer size m at which a classic Bloom filter
// with k hashes holding n keys has the false-positive rate DatasetFPRate,
// from formula (1) solved for m: m = −k·n / ln(1 − p^(1/k)). That is about
// 12.4 bits per URL at k = 3; the paper's m, 16,829,152 bits, is its value
// for about 1.36 million URLs. It is at least one 512-bit block.
func BitsForDataset(n, k int) uint64 {
	if n < 1 || k < 1 {
		return mlbf.BlockBits
	}
	m := -float64(k) * float64(n) / math.Log(1-math.Pow(DatasetFPRate, 1/float64(k)))
	return max(uint64(math.Ceil(m)), mlbf.BlockBits)
}

// RunFP loads the sources, plans the checkpoints, measures the structures
// (the n sweep, then the memory sweep when BitsPerURL are given) and
// writes fp.csv, the plots (PNG and SVG) and report.md into OutDir.
func RunFP(ctx context.Context, cfg FPConfig) (*Report, error) {
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	if cfg.OutDir == "" {
		return nil, fmt.Errorf("experiments: no output directory: %w", ErrInvalidOptions)
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if cfg.SegmenterName == "" {
		cfg.SegmenterName = "mlbf.SplitURL (the paper's plain split)"
	}
	rep := &Report{Command: cfg.Command, Seed: cfg.Plan.Seed, Order: cfg.Plan.Order, Segmenter: cfg.SegmenterName, Parallel: cfg.Parallel,
		BitsPerURL: cfg.BitsPerURL, LoadStart: LoadAverage()}
	rep.Machine = DescribeMachine(ctx)

	start := time.Now()
	d, err := LoadDataset(ctx, cfg.Sources, cfg.Read)
	if err != nil {
		return nil, err
	}
	rep.Dataset = d
	p, err := NewPlan(d, cfg.Plan)
	if err != nil {
		return nil, err
	}
	rep.Plan = p
	rep.LoadTime = time.Since(start)
	fmt.Fprintf(logw, "read %d lines: %d distinct URLs, %d duplicates, %d bad lines, %d blank (%s)\n",
		d.Total.Lines, len(d.URLs), d.Duplicates(), d.Total.Bad, d.Total.Blank, rep.LoadTime.Round(time.Millisecond))
	if len(p.Dropped) > 0 {
		fmt.Fprintf(logw, "the sources hold %d URLs to insert (after the %d held out): n = %v not measured, stopping at %d\n",
			len(p.Insert), len(p.Holdout), p.Dropped, len(p.Insert))
	}

	so := cfg.Filters
	so.MaxN = p.Checkpoints[len(p.Checkpoints)-1]
	so.Sample = p.Insert[:min(len(p.Insert), SampleSize)]
	if so.Bits == 0 {
		k := so.Hashes
		if k == 0 {
			k = mlbf.DefaultHashes
		}
		so.Bits = BitsForDataset(so.MaxN, k)
		fmt.Fprintf(logw, "m = %d bits per layer, sized from the dataset: bf (k = %d) reaches %g%% false positives at n = %d\n",
			so.Bits, k, 100*DatasetFPRate, so.MaxN)
	}
	structs, notes, err := BuildStructures(cfg.Structures, so)
	if err != nil {
		return nil, err
	}
	rep.Structures, rep.StructNotes = structs, notes
	var sweep []Structure
	sp := p.AtSweepN()
	if len(cfg.BitsPerURL) > 0 {
		if p.SweepNDropped > 0 {
			fmt.Fprintf(logw, "the sources hold %d URLs to insert: sweep n = %d not measured, the memory sweep is at n = %d\n",
				len(p.Insert), p.SweepNDropped, p.SweepN)
		}
		so.MaxN = p.SweepN
		var sizing SweepSizing
		if sweep, sizing, err = BuildSweepStructures(cfg.Structures, so, cfg.BitsPerURL); err != nil {
			return nil, err
		}
		rep.SweepNotes, rep.SweepSkipped = sizing.Notes, sizing.Skipped
		for _, s := range sizing.Skipped {
			fmt.Fprintf(logw, "memory sweep: not measured: %s\n", s)
		}
	}
	// The plan's URL slices stay live; drop the dedup garbage before timing.
	runtime.GC()

	var prog *Progress
	if cfg.Progress != nil {
		prog = NewProgress(cfg.Progress, p.Work()*int64(len(structs))+sp.Work()*int64(len(sweep)))
	}
	start = time.Now()
	rows, err := Run(ctx, p, structs, RunOptions{Parallel: cfg.Parallel, Progress: prog, Seed: cfg.Plan.Seed, Sweep: SweepCheckpoints})
	if err != nil {
		return nil, err
	}
	rep.RunTime = time.Since(start)
	if len(sweep) > 0 {
		start = time.Now()
		memRows, err := Run(ctx, sp, sweep, RunOptions{Parallel: cfg.Parallel, Progress: prog, Seed: cfg.Plan.Seed, Sweep: SweepMemory})
		if err != nil {
			return nil, err
		}
		rep.SweepTime = time.Since(start)
		rows = append(rows, memRows...)
	}
	prog.Finish()
	rep.LoadEnd = LoadAverage()
	rep.Rows = rows

	if err := writeFile(filepath.Join(cfg.OutDir, "fp.csv"), func(w io.Writer) error { return WriteCSV(w, rows) }); err != nil {
		return nil, err
	}
	rep.Files = append(rep.Files, "fp.csv")
	figs, err := Figures(rows)
	if err != nil {
		return nil, err
	}
	names, err := WriteFigures(cfg.OutDir, figs)
	if err != nil {
		return nil, err
	}
	rep.Files = append(rep.Files, names...)
	rep.PeakRSS = PeakRSS()
	if err := writeFile(filepath.Join(cfg.OutDir, "report.md"), func(w io.Writer) error { return WriteReport(w, rep) }); err != nil {
		return nil, err
	}
	fmt.Fprintf(logw, "wrote fp.csv, report.md and %d plot files to %s (measurement: n sweep %s, memory sweep %s)\n", len(names), cfg.OutDir, rep.RunTime.Round(time.Millisecond), rep.SweepTime.Round(time.Millisecond))
	return rep, nil
}
