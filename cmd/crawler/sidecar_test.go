package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/layercrawl/layercrawl/storage"
)

// checkSidecarIndex checks that the index the crawl wrote to dir is byte
// for byte the one IndexWARCs writes by reading every WARC file, and that
// all but reread of the WARC files have a complete sidecar index (the
// files open when a crawl was killed have none: they were read).
func checkSidecarIndex(t *testing.T, dir string, reread int) {
	t.Helper()
	files, err := storage.CrawlWARCFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var read, side bytes.Buffer
	if _, err := storage.IndexWARCs(context.Background(), &read, files, storage.IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := storage.IndexWARCs(context.Background(), &side, files, storage.IndexOptions{SidecarDir: filepath.Join(dir, storage.CrawlSidecarDir)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, storage.CrawlIndexPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, read.Bytes()) || !bytes.Equal(side.Bytes(), read.Bytes()) {
		t.Errorf("the crawl's index (%d bytes) or the one from sidecars (%d) is not the one read from the WARC files (%d)", len(got), side.Len(), read.Len())
	}
	if st.Sidecars != len(files)-reread || read.Len() == 0 {
		t.Errorf("%d of %d WARC files have a complete sidecar, want all but %d; %d index bytes", st.Sidecars, len(files), reread, read.Len())
	}
}
