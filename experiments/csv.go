package experiments

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// CSVColumns are the columns of fp.csv, in order. The first thirteen are
// fixed; the later ones add what the reading of the results
// needs (members excluded from url+id, bits set per insertion, the seed,
// and the sweep a row belongs to: "n" for the checkpoints of the n sweep,
// "bits" for the memory sweep at fixed n).
var CSVColumns = []string{
	"workload", "structure", "n", "layers", "hashes", "bits_total", "bits_per_url",
	"queries", "false_positives", "fp_rate", "theory_fp_rate",
	"insert_ns_per_url", "query_ns_per_url",
	"excluded_members", "probes_per_insert", "seed", "sweep",
}

// WriteCSV writes a header line of CSVColumns and one line per row.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVColumns); err != nil {
		return fmt.Errorf("experiments: write csv: %w", err)
	}
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
	for _, r := range rows {
		rec := []string{
			r.Workload, r.Structure, strconv.Itoa(r.N), strconv.Itoa(r.Layers), strconv.Itoa(r.Hashes),
			strconv.FormatUint(r.BitsTotal, 10), g(r.BitsPerURL),
			strconv.FormatInt(r.Queries, 10), strconv.FormatInt(r.FalsePositives, 10), g(r.FPRate), g(r.TheoryFPRate),
			strconv.FormatFloat(r.InsertNsPerURL, 'f', 1, 64), strconv.FormatFloat(r.QueryNsPerURL, 'f', 1, 64),
			strconv.FormatInt(r.ExcludedMembers, 10), strconv.FormatFloat(r.ProbesPerInsert, 'f', 2, 64), strconv.FormatUint(r.Seed, 10),
			cmp.Or(r.Sweep, SweepCheckpoints),
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("experiments: write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("experiments: write csv: %w", err)
	}
	return nil
}

// ErrBadCSV is wrapped by ReadCSV's errors about malformed input.
var ErrBadCSV = errors.New("experiments: bad fp.csv")

// ReadCSV parses a file written by WriteCSV, so that plots can be redrawn
// without rerunning the measurements. The header must start with the
// issue's thirteen columns; later columns are read by name when present. A
// file without the sweep column (written before the memory sweep existed)
// holds n-sweep rows only.
func ReadCSV(r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCSV, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadCSV)
	}
	head := recs[0]
	if len(head) < 13 || !slices.Equal(head[:13], CSVColumns[:13]) {
		return nil, fmt.Errorf("%w: header %q does not start with %q", ErrBadCSV, head, CSVColumns[:13])
	}
	col := make(map[string]int)
	for i, h := range head {
		col[h] = i
	}
	var rows []Row
	for ln, rec := range recs[1:] {
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%w: line %d has %d fields, want %d", ErrBadCSV, ln+2, len(rec), len(head))
		}
		var perr error
		get := func(name string) string {
			if i, ok := col[name]; ok {
				return rec[i]
			}
			return ""
		}
		num := func(name string) float64 {
			s := get(name)
			if s == "" {
				return 0
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				perr = fmt.Errorf("%w: line %d: %s = %q is not a finite non-negative number", ErrBadCSV, ln+2, name, s)
			}
			return f
		}
		integer := func(name string) int64 {
			s := get(name)
			if s == "" {
				return 0
			}
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 {
				perr = fmt.Errorf("%w: line %d: %s = %q is not a non-negative integer", ErrBadCSV, ln+2, name, s)
			}
			return v
		}
		row := Row{
			Workload: get("workload"), Structure: get("structure"),
			N: int(integer("n")), Layers: int(integer("layers")), Hashes: int(integer("hashes")),
			BitsTotal: uint64(integer("bits_total")), BitsPerURL: num("bits_per_url"),
			Queries: integer("queries"), FalsePositives: integer("false_positives"),
			FPRate: num("fp_rate"), TheoryFPRate: num("theory_fp_rate"),
			InsertNsPerURL: num("insert_ns_per_url"), QueryNsPerURL: num("query_ns_per_url"),
			ExcludedMembers: integer("excluded_members"), ProbesPerInsert: num("probes_per_insert"),
			Seed: uint64(integer("seed")), Sweep: cmp.Or(get("sweep"), SweepCheckpoints),
		}
		if perr != nil {
			return nil, perr
		}
		if row.Sweep != SweepCheckpoints && row.Sweep != SweepMemory {
			return nil, fmt.Errorf("%w: line %d: sweep = %q, want %q or %q", ErrBadCSV, ln+2, row.Sweep, SweepCheckpoints, SweepMemory)
		}
		rows = append(rows, row)
	}
	return rows, nil
}
