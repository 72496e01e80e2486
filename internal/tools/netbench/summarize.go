package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
)

// row is one (scenario, label) group of a results file.
type row struct {
	scenario, label  string
	wall, cpu, ideal []float64 // seconds, per run
	cpuPerPage       []float64 // ms, per run
	pages, requests  []float64
	loads            []float64
	failed           int
	// order is the wall time of every run in file order, NaN for a
	// failed one: run i of one crawler is paired with run i of the
	// baseline, which the driver script runs in the same round.
	order []float64
}

func summarizeCommand(args []string) error {
	fs := flag.NewFlagSet("netbench summarize", flag.ContinueOnError)
	baseline := fs.String("baseline", "", "label whose median wall time the others are divided by, per scenario")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("netbench summarize: need one results file")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("netbench summarize: %w", err)
	}
	defer f.Close()
	rows, err := readResults(f)
	if err != nil {
		return err
	}
	fmt.Print(table(rows, *baseline))
	return nil
}

// readResults groups a results file by scenario and label, in order of
// first appearance.
func readResults(r io.Reader) ([]*row, error) {
	cr := csv.NewReader(r)
	cr.Comma = '\t'
	cr.FieldsPerRecord = len(resultHeader)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("netbench summarize: %w", err)
	}
	var rows []*row
	for i, rec := range recs {
		if i == 0 && rec[0] == resultHeader[0] {
			continue
		}
		k := slices.IndexFunc(rows, func(r *row) bool { return r.scenario == rec[0] && r.label == rec[1] })
		if k < 0 {
			rows = append(rows, &row{scenario: rec[0], label: rec[1]})
			k = len(rows) - 1
		}
		g := rows[k]
		v := make([]float64, len(resultHeader))
		for j := 2; j < len(rec); j++ {
			if v[j], err = strconv.ParseFloat(rec[j], 64); err != nil && j != 9 {
				return nil, fmt.Errorf("netbench summarize: line %d, %s: %w", i+1, resultHeader[j], err)
			}
		}
		if v[10] != 0 {
			g.failed++
			g.order = append(g.order, math.NaN())
			continue
		}
		g.order = append(g.order, v[2])
		cpu := v[3] + v[4]
		g.wall = append(g.wall, v[2])
		g.cpu = append(g.cpu, cpu)
		g.requests = append(g.requests, v[5])
		g.pages = append(g.pages, v[6])
		g.ideal = append(g.ideal, v[8])
		g.loads = append(g.loads, v[9])
		if v[6] > 0 {
			g.cpuPerPage = append(g.cpuPerPage, 1000*cpu/v[6])
		}
	}
	return rows, nil
}

// table renders rows as Markdown: medians over each group's runs, and
// the median of the ratios of its wall times to the baseline's in the
// same rounds (paired, so that a load that changes between rounds
// cancels), with their range.
func table(rows []*row, baseline string) string {
	out := "| scenario | crawler | runs | wall s | ideal s | wall / ideal | wall / " + baseline + " (paired; min-max) | CPU s | CPU ms / page | pages | requests | load 1m |\n"
	out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
	for _, g := range rows {
		var paired []float64
		for _, b := range rows {
			if b.scenario == g.scenario && b.label == baseline {
				for i := range min(len(g.order), len(b.order)) {
					if r := g.order[i] / b.order[i]; !math.IsNaN(r) && !math.IsInf(r, 0) {
						paired = append(paired, r)
					}
				}
			}
		}
		ratio := "-"
		if len(paired) > 0 {
			ratio = fmt.Sprintf("%.3f; %.3f-%.3f", median(paired), minOf(paired), maxOf(paired))
		}
		runs := fmt.Sprint(len(g.wall))
		if g.failed > 0 {
			runs += fmt.Sprintf(" (+%d failed)", g.failed)
		}
		out += fmt.Sprintf("| %s | %s | %s | %.2f | %.2f | %.3f | %s | %.2f | %.3f | %.0f | %.0f | %.1f-%.1f |\n",
			g.scenario, g.label, runs, median(g.wall), median(g.ideal), median(ratios(g.wall, g.ideal)), ratio,
			median(g.cpu), median(g.cpuPerPage), median(g.pages), median(g.requests), minOf(g.loads), maxOf(g.loads))
	}
	return out
}

func ratios(a, b []float64) []float64 {
	r := make([]float64, 0, len(a))
	for i := range a {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return r
}

// median returns the median of v (the mean of the middle two for an even
// count), or 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Min(v)
}

func maxOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}
