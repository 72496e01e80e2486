package experiments

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	CPUModel  string // "model name" of /proc/cpuinfo, or "unknown"
	Cores     int    // runtime.NumCPU
	OS, Arch  string
	GoVersion string
	// Commit is the commit the running binary was built from (its Go
	// build info, "-dirty" when built from a modified tree), else `git
	// describe --always --dirty` of the working directory (go run and
	// test binaries carry no commit), else "unknown".
	Commit string
}

// DescribeMachine collects the Machine of the current process. It never
// fails: what cannot be found is "unknown".
func DescribeMachine(ctx context.Context) Machine {
	m := Machine{
		CPUModel: "unknown", Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		GoVersion: runtime.Version(), Commit: "unknown",
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = cpuModel(b)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if c := commitOf(bi.Settings); c != "" {
			m.Commit = c
			return m
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty", "--abbrev=12").Output(); err == nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			m.Commit = s
		}
	}
	return m
}

// commitOf returns the 12-digit vcs.revision of build settings, with
// "-dirty" when vcs.modified is true, or "" without a revision.
func commitOf(settings []debug.BuildSetting) string {
	var rev, dirty string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(12, len(rev))] + dirty
}

func cpuModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// PeakRSS returns the peak resident set size of the current process in
// bytes (VmHWM of /proc/self/status), or 0 where it is not available.
func PeakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// LoadAverage returns the 1, 5 and 15 minute load averages of
// /proc/loadavg ("2.92 2.40 1.20"), or "" where it is not available: the
// timings of a run mean little without the machine's load beside them.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Report is what report.md summarizes.
type Report struct {
	Command     string // the exact command line
	Seed        uint64
	Order       Order
	Segmenter   string
	Machine     Machine
	Dataset     *Dataset
	Plan        *Plan
	Structures  []Structure
	StructNotes map[string]string // how each structure is built and sized
	// BitsPerURL are the memory sweep's sizes, none when it was not run;
	// SweepNotes says how each structure is scaled in it.
	BitsPerURL []float64
	SweepNotes map[string]string
	// SweepSkipped are the memory sweep's points left out (too little
	// memory to build that structure at that n).
	SweepSkipped []string
	Rows         []Row
	Files        []string // files written beside the report
	LoadTime     time.Duration
	RunTime      time.Duration // the n sweep
	SweepTime    time.Duration // the memory sweep
	LoadStart    string        // LoadAverage when the run started
	LoadEnd      string        // LoadAverage when the measurements ended
	PeakRSS      uint64
	Parallel     int
}

// WriteReport writes rep as Markdown.
func WriteReport(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Experiment report\n\n")
	fmt.Fprintf(&b, "Command:\n\n```sh\n%s\n```\n\n", rep.Command)
	m := rep.Machine
	fmt.Fprintf(&b, "## Machine\n\n")
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPU | %s |\n| cores | %d |\n| OS/arch | %s/%s |\n| Go | %s |\n| commit | %s |\n",
		m.CPUModel, m.Cores, m.OS, m.Arch, m.GoVersion, m.Commit)
	fmt.Fprintf(&b, "| seed | %d |\n| insertion order | %s |\n| segmentation | %s |\n| structures measured at once | %d |\n",
		rep.Seed, rep.Order, rep.Segmenter, max(1, rep.Parallel))
	fmt.Fprintf(&b, "| load and dedup time | %s |\n| measurement time, n sweep | %s |\n", rep.LoadTime.Round(time.Millisecond), rep.RunTime.Round(time.Millisecond))
	if len(rep.BitsPerURL) > 0 {
		fmt.Fprintf(&b, "| measurement time, memory sweep | %s |\n", rep.SweepTime.Round(time.Millisecond))
	}
	if rep.LoadStart != "" {
		fmt.Fprintf(&b, "| load average (1, 5, 15 min) at start | %s |\n| load average at end of measurements | %s |\n", rep.LoadStart, rep.LoadEnd)
	}
	if rep.PeakRSS > 0 {
		fmt.Fprintf(&b, "| peak RSS (VmHWM) | %.1f MiB |\n", float64(rep.PeakRSS)/(1<<20))
	}
	b.WriteString("\n")

	if d := rep.Dataset; d != nil {
		fmt.Fprintf(&b, "## Input\n\n")
		fmt.Fprintf(&b, "| source | lines | blank | bad | accepted | new distinct | invalid UTF-8 kept |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range d.Sources {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d |\n", s.Path, s.Read.Lines, s.Read.Blank, s.Read.Bad, s.Read.URLs, s.Distinct, s.Read.InvalidUTF8)
		}
		t := d.Total
		fmt.Fprintf(&b, "| **total** | %d | %d | %d | %d | %d | %d |\n\n", t.Lines, t.Blank, t.Bad, t.URLs, len(d.URLs), t.InvalidUTF8)
		if t.Bad > 0 {
			var reasons []string
			for r, c := range t.BadBy {
				if c > 0 {
					reasons = append(reasons, fmt.Sprintf("%s: %d", BadReason(r), c))
				}
			}
			fmt.Fprintf(&b, "Bad lines by reason: %s. First examples:\n\n", strings.Join(reasons, ", "))
			for _, e := range t.Examples {
				fmt.Fprintf(&b, "- %s:%d (%s): `%q`\n", e.Source, e.Line, e.Reason, e.Prefix)
			}
			b.WriteString("\n")
		}
	}
	if p := rep.Plan; p != nil {
		fmt.Fprintf(&b, "## Plan\n\n")
		fmt.Fprintf(&b, "- %d distinct URLs available for insertion, %d held out for the holdout workload (disjoint, same sources, chosen by the seed).\n", len(p.Insert), len(p.Holdout))
		ns := make([]string, len(p.Checkpoints))
		for i, n := range p.Checkpoints {
			ns[i] = strconv.Itoa(n)
		}
		fmt.Fprintf(&b, "- checkpoints n: %s (one insertion pass per structure; both workloads are measured at each checkpoint, and queries do not change the filter).\n", strings.Join(ns, ", "))
		if len(p.Dropped) > 0 {
			fmt.Fprintf(&b, "- **requested n values %v exceed the %d URLs available: not measured, nothing padded; the last checkpoint is all available URLs.**\n", p.Dropped, len(p.Insert))
		}
		if len(rep.BitsPerURL) > 0 {
			fmt.Fprintf(&b, "- memory sweep: n = %d, bits per URL %s (every structure rebuilt at each total memory of bits per URL × n, one insertion pass per size, then both workloads).\n", p.SweepN, FormatBitsPerURL(rep.BitsPerURL, ", "))
			if p.SweepNDropped > 0 {
				fmt.Fprintf(&b, "- **requested sweep n %d exceeds the %d URLs available: the sweep is at all available URLs, nothing padded.**\n", p.SweepNDropped, len(p.Insert))
			}
		} else {
			b.WriteString("- **no memory sweep was run (--bits-per-url none): the FP vs bits per URL figures are absent.**\n")
		}
		b.WriteString("- A query whose key equals an inserted URL's key is a true member, not counted as a query (column excluded_members of fp.csv): the key is the exact string for the classic filters and the segment list for the multi-layer ones, which drop the scheme, so `http://a/x` and `https://a/x` are one key.\n\n")
	}
	if len(rep.Structures) > 0 {
		fmt.Fprintf(&b, "## Structures\n\n| structure | layers | hashes | bits total | bits set per insert | how it is built |\n|---|---:|---:|---:|---:|---|\n")
		for _, s := range rep.Structures {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %.2f | %s |\n", s.Name, s.Layers, s.Hashes, s.BitsTotal, s.ProbesPerInsert, rep.StructNotes[s.Name])
		}
		b.WriteString("\n")
	}
	if len(rep.SweepNotes) > 0 {
		fmt.Fprintf(&b, "## Memory sweep structures\n\nAt n = %d, for each bits per URL b: total memory b·n bits.\n\n| structure | how it is scaled |\n|---|---|\n", rep.Plan.SweepN)
		for _, name := range AllStructures {
			if note, ok := rep.SweepNotes[name]; ok {
				fmt.Fprintf(&b, "| %s | %s |\n", name, note)
			}
		}
		b.WriteString("\n")
		if len(rep.SweepSkipped) > 0 {
			b.WriteString("Points left out (too little memory to build the structure at this n):\n\n")
			for _, s := range rep.SweepSkipped {
				fmt.Fprintf(&b, "- %s\n", s)
			}
			b.WriteString("\n")
		}
	}
	var nRows, memRows []Row
	for _, r := range rep.Rows {
		if r.IsMemorySweep() {
			memRows = append(memRows, r)
		} else {
			nRows = append(nRows, r)
		}
	}
	for _, t := range []struct {
		title string
		rows  []Row
	}{{"Results: n sweep", nRows}, {"Results: memory sweep", memRows}} {
		if len(t.rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", t.title)
		fmt.Fprintf(&b, "| workload | structure | n | hashes | bits total | bits/URL | queries | excluded members | FP | FP rate | theory | insert ns/URL | query ns |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range t.rows {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %.2f | %d | %d | %d | %.3g | %.3g | %.0f | %.0f |\n",
				r.Workload, r.Structure, r.N, r.Hashes, r.BitsTotal, r.BitsPerURL, r.Queries, r.ExcludedMembers, r.FalsePositives, r.FPRate, r.TheoryFPRate, r.InsertNsPerURL, r.QueryNsPerURL)
		}
		b.WriteString("\n")
	}
	if len(rep.Files) > 0 {
		fmt.Fprintf(&b, "## Files\n\n")
		for _, f := range rep.Files {
			if strings.HasSuffix(f, ".png") {
				fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(f, ".png"), f)
			} else {
				fmt.Fprintf(&b, "- [%s](%s)\n\n", f, f)
			}
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("experiments: write report: %w", err)
	}
	return nil
}
