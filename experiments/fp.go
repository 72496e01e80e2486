package experiments

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// FPConfig configures RunFP, the whole false-positive experiment.
type FPConfig struct {
	Sources    []Source
	Read       ReadOptions
	Plan       PlanOptions
	Structures []string         // names; default AllStructures
	Filters    StructureOptions // Layers, Hashes, Bits and Segment; Sample and MaxN are set by RunFP
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

// RunFP loads the sources, plans the checkpoints, measures the structures
// and writes fp.csv, the plots (PNG and SVG) and report.md into OutDir.
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
	rep := &Report{Command: cfg.Command, Seed: cfg.Plan.Seed, Order: cfg.Plan.Order, Segmenter: cfg.SegmenterName, Parallel: cfg.Parallel}
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
	structs, notes, err := BuildStructures(cfg.Structures, so)
	if err != nil {
		return nil, err
	}
	rep.Structures, rep.StructNotes = structs, notes
	// The plan's URL slices stay live; drop the dedup garbage before timing.
	runtime.GC()

	var prog *Progress
	if cfg.Progress != nil {
		prog = NewProgress(cfg.Progress, p.Work()*int64(len(structs)))
	}
	start = time.Now()
	rows, err := Run(ctx, p, structs, RunOptions{Parallel: cfg.Parallel, Progress: prog, Seed: cfg.Plan.Seed})
	if err != nil {
		return nil, err
	}
	prog.Finish()
	rep.RunTime = time.Since(start)
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
	fmt.Fprintf(logw, "wrote fp.csv, report.md and %d plot files to %s (measurement %s)\n", len(names), cfg.OutDir, rep.RunTime.Round(time.Millisecond))
	return rep, nil
}
