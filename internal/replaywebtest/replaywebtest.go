// Package replaywebtest provides ReplayWeb.page's static app (the npm
// package replaywebpage: index.html, ui.js, sw.js) to tests that replay a
// WACZ file in a browser.
//
// Dir finds it: $REPLAYWEB_DIR if set (CI: `npm pack replaywebpage@2.5.3`
// and extract it there, as .ci/run does), else a per-user cache directory,
// filled with npm on first use. The package's tarball is all that is
// needed: ui.js and sw.js bundle their dependencies, so it is fetched with
// "npm pack" (no dependency resolution) and extracted here. Without npm the
// test is skipped, unless CI=true, where it fails.
package replaywebtest

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Version is the replaywebpage release the tests were written against.
const Version = "2.5.3"

// Dir returns a directory holding ReplayWeb.page's index.html, ui.js and
// sw.js.
func Dir(t testing.TB) string {
	t.Helper()
	unavailable := func(format string, args ...any) string {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("ReplayWeb.page unavailable: %s", msg)
		}
		t.Skipf("ReplayWeb.page unavailable (set REPLAYWEB_DIR or install npm): %s", msg)
		return ""
	}
	dir := os.Getenv("REPLAYWEB_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return unavailable("%v", err)
		}
		dir = filepath.Join(cache, "layercrawl-test", "replaywebpage-"+Version, "package")
	}
	if complete(dir) {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return unavailable("%v", err)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return unavailable("%v", err)
	}
	cmd := exec.Command("npm", "pack", "--silent", "replaywebpage@"+Version)
	cmd.Dir = parent
	out, err := cmd.CombinedOutput()
	if err != nil {
		return unavailable("npm pack replaywebpage: %v\n%s", err, out)
	}
	if err := extract(filepath.Join(parent, "replaywebpage-"+Version+".tgz"), parent); err != nil {
		return unavailable("%v", err)
	}
	if !complete(dir) {
		return unavailable("%s lacks index.html, ui.js or sw.js after npm pack", dir)
	}
	return dir
}

func complete(dir string) bool {
	for _, f := range []string{"index.html", "ui.js", "sw.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// extract unpacks the regular files of an npm tarball (all under
// package/) into dir.
func extract(tgz, dir string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(name, "package"+string(filepath.Separator)) {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		out, err := os.Create(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}
