package main

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

func TestWriteVersion(t *testing.T) {
	stamped := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "3627d91c0ffee"},
		{Key: "vcs.time", Value: "2026-11-28T06:00:00Z"},
	}
	for _, tc := range []struct {
		name   string
		bi     debug.BuildInfo
		linked string
		want   string
	}{
		{"tagged and clean",
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/layercrawl/layercrawl", Version: "v1.2.0"},
				Settings: append(stamped, debug.BuildSetting{Key: "vcs.modified", Value: "false"})}, "",
			"crawler github.com/layercrawl/layercrawl v1.2.0\nrevision 3627d91c0ffee\ncommit time 2026-11-28T06:00:00Z\ngo go1.26.0\n"},
		{"modified work tree",
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/layercrawl/layercrawl", Version: "(devel)"},
				Settings: append(stamped, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "",
			"crawler github.com/layercrawl/layercrawl (devel)\nrevision 3627d91c0ffee (modified: uncommitted changes in the work tree)\ncommit time 2026-11-28T06:00:00Z\ngo go1.26.0\n"},
		{"no VCS stamp",
			debug.BuildInfo{GoVersion: "go1.26.0"}, "",
			"crawler github.com/layercrawl/layercrawl (devel)\nrevision unknown (built outside a git checkout, with go run, or with -buildvcs=false)\ngo go1.26.0\n"},
		{"revision given at link time (a Docker build)",
			debug.BuildInfo{GoVersion: "go1.26.0"}, "4dd1200abc",
			"crawler github.com/layercrawl/layercrawl (devel)\nrevision 4dd1200abc (given at link time)\ngo go1.26.0\n"},
		{"the VCS stamp wins over a linked revision",
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: stamped}, "4dd1200abc",
			"crawler github.com/layercrawl/layercrawl (devel)\nrevision 3627d91c0ffee\ncommit time 2026-11-28T06:00:00Z\ngo go1.26.0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeVersion(&b, &tc.bi, tc.linked)
			if got := b.String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestVersionCommand runs "crawler version" in the test binary, which has
// build information but no VCS stamp, and checks that "crawler help" lists
// the command.
func TestVersionCommand(t *testing.T) {
	var o, e strings.Builder
	if code := run(context.Background(), env{stdout: &o, stderr: &e}, []string{"version"}); code != 0 {
		t.Fatalf("crawler version exited %d: %s", code, e.String())
	}
	if !strings.HasPrefix(o.String(), "crawler ") || !strings.Contains(o.String(), "\ngo go1.") {
		t.Errorf("crawler version printed %q", o.String())
	}
	if code := run(context.Background(), env{stdout: &o, stderr: &e}, []string{"version", "extra"}); code != 2 {
		t.Errorf("crawler version extra: exit %d, want 2", code)
	}
	o.Reset()
	run(context.Background(), env{stdout: &o, stderr: &e}, []string{"help"})
	if !strings.Contains(o.String(), "\n  version ") {
		t.Errorf("crawler help does not list version:\n%s", o.String())
	}
}
