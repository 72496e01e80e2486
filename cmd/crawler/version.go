package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints the module version the binary was built from and, when
// it was built inside a git checkout, the commit, its time and whether the
// work tree had uncommitted changes (go build records them unless
// -buildvcs=false; go run and go test do not).
func runVersion(_ context.Context, e env, args []string) error {
	fs := newFlagSet(e, "version", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return errNoBuildInfo
	}
	writeVersion(e.stdout, bi, revision)
	return nil
}

// revision is the commit a build outside a git checkout was made from, set
// with -ldflags "-X main.revision=COMMIT" (the Dockerfile's REVISION build
// argument): a Docker build context has no .git for go build to read.
var revision string

// errNoBuildInfo: a binary built without module support.
var errNoBuildInfo = errors.New("crawler: no build information")

// writeVersion prints bi as "crawler" lines: the module and its version,
// then the VCS settings go build stamped (or, without them, the revision
// given at link time, if any), then the Go version.
func writeVersion(w io.Writer, bi *debug.BuildInfo, linked string) {
	path, version := bi.Main.Path, bi.Main.Version
	if path == "" {
		path = "github.com/layercrawl/layercrawl"
	}
	if version == "" {
		version = "(devel)"
	}
	fmt.Fprintf(w, "crawler %s %s\n", path, version)
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if rev := vcs["vcs.revision"]; rev != "" {
		modified := ""
		if vcs["vcs.modified"] == "true" {
			modified = " (modified: uncommitted changes in the work tree)"
		}
		fmt.Fprintf(w, "revision %s%s\n", rev, modified)
		if t := vcs["vcs.time"]; t != "" {
			fmt.Fprintf(w, "commit time %s\n", t)
		}
	} else if linked != "" {
		fmt.Fprintf(w, "revision %s (given at link time)\n", linked)
	} else {
		fmt.Fprintln(w, "revision unknown (built outside a git checkout, with go run, or with -buildvcs=false)")
	}
	fmt.Fprintf(w, "go %s\n", bi.GoVersion)
}
