// Package warciotest runs the independent WARC reader warcio.js over WARC
// files for tests outside storage/, with storage's checker script
// (storage/testdata/warcio_check.mjs), and returns what it read.
//
// Prefix finds warcio.js: $WARCIO_PREFIX if set (CI: `npm install --prefix
// "$WARCIO_PREFIX" warcio@2.4.11`), else a per-user cache directory,
// installing warcio there with npm on first use. Without node or npm the
// test is skipped, unless CI=true, where it fails.
package warciotest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Version is the warcio.js release the checker script was written against.
const Version = "2.4.11"

// Prefix returns a directory holding node_modules/warcio.
func Prefix(t testing.TB) string {
	t.Helper()
	unavailable := func(format string, args ...any) string {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("warcio.js unavailable: %s", msg)
		}
		t.Skipf("warcio.js unavailable (set WARCIO_PREFIX or install node and npm): %s", msg)
		return ""
	}
	if _, err := exec.LookPath("node"); err != nil {
		return unavailable("%v", err)
	}
	prefix := os.Getenv("WARCIO_PREFIX")
	if prefix == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return unavailable("%v", err)
		}
		prefix = filepath.Join(cache, "layercrawl-test", "warcio-"+Version)
	}
	if _, err := os.Stat(filepath.Join(prefix, "node_modules", "warcio", "package.json")); err == nil {
		return prefix
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return unavailable("%v", err)
	}
	cmd := exec.Command("npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", "--silent", "warcio@"+Version)
	if out, err := cmd.CombinedOutput(); err != nil {
		return unavailable("npm install warcio: %v\n%s", err, out)
	}
	return prefix
}

// Record is warcio.js's view of one record, as the checker script prints
// it. The digests are "sha1:" and base32, computed by the script: Payload
// over the bytes after the HTTP head as stored (chunk framing included, as
// warcio hashes them), Entity over the final response's entity (1xx interim
// responses skipped, chunked transfer coding removed with warcio's own
// de-chunker, content coding kept), Block over the whole block.
type Record struct {
	File        string            `json:"file"`
	Offset      int64             `json:"offset"`
	Type        string            `json:"type"`
	Headers     map[string]string `json:"headers"`
	StatusLine  string            `json:"statusline"`
	HTTP        map[string]string `json:"http"`
	PayloadSHA1 string            `json:"payload_sha1"`
	PayloadLen  int               `json:"payload_len"`
	EntitySHA1  string            `json:"entity_sha1"`
	EntityLen   int               `json:"entity_len"`
	FinalStatus int               `json:"final_status"`
	BlockSHA1   string            `json:"block_sha1"`
	BlockLen    int               `json:"block_len"`
}

// Read runs script (the path of storage/testdata/warcio_check.mjs from the
// calling test's directory) over files, in order, and returns one Record
// per record warcio.js read.
func Read(t testing.TB, script string, files ...string) []Record {
	t.Helper()
	prefix := Prefix(t)
	cmd := exec.Command("node", append([]string{script, prefix}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("warcio.js: %v\n%s", err, stderr.String())
	}
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("warcio.js output %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("warcio.js output: %v", err)
	}
	return recs
}
