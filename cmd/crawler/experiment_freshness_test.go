package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExperimentFreshness runs the freshness experiment on a small web.
func TestExperimentFreshness(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"experiment", "freshness", "--pages", "100", "--hosts", "2", "--runs", "1", "--duration", "2h", "--budget-share", "0.1", "--samples", "6", "--policies", "uniform,adaptive", "--out", out}
	code, _, stderr := runCmd("", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	runs, err := os.ReadFile(filepath.Join(out, "freshness_runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(runs), "\n"); lines != 3 {
		t.Errorf("freshness_runs.csv has %d lines, want a header and 2 runs:\n%s", lines, runs)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "crawler " + strings.Join(args, " "); !strings.Contains(string(report), want) {
		t.Errorf("report.md lacks the command %q", want)
	}
	for _, bad := range [][]string{
		{"experiment", "freshness", "--policies", "fifo"},
		{"experiment", "freshness", "--runs", "-1", "--out", out},
		{"experiment", "freshness", "--duration", "1s", "--out", out},
	} {
		if code, _, _ := runCmd("", bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", bad, code)
		}
	}
}
