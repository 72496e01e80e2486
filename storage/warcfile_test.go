package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadWARCFile(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range testExchanges(3) {
		if _, err := w.Write(ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	path := filepath.Join(dir, files[0].name)
	var ids []string
	if err := ReadWARCFile(path, func(rec *WARCRecord) error {
		ids = append(ids, rec.Header.Get("WARC-Record-ID"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := len(ids), len(files[0].records); got != want {
		t.Fatalf("got %d records, want %d", got, want)
	}
	for i, rec := range files[0].records {
		if got, want := ids[i], rec.Header.Get("WARC-Record-ID"); got != want {
			t.Errorf("record %d: got %s, want %s", i, got, want)
		}
	}

	stop := errors.New("stop")
	n := 0
	if err := ReadWARCFile(path, func(*WARCRecord) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("fn's error: got %v after %d records, want stop after 1", err, n)
	}

	// A file cut inside its last record: every whole record first, then
	// ErrTruncated naming the file.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.warc.gz")
	if err := os.WriteFile(cut, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	n = 0
	err = ReadWARCFile(cut, func(*WARCRecord) error { n++; return nil })
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut file: got %v, want ErrTruncated", err)
	}
	if got, want := n, len(files[0].records)-1; got != want {
		t.Errorf("cut file: %d whole records, want %d", got, want)
	}
	if !strings.Contains(err.Error(), cut) {
		t.Errorf("error %q does not name %s", err, cut)
	}
	if err := ReadWARCFile(filepath.Join(dir, "absent.warc.gz"), func(*WARCRecord) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: got %v, want ErrNotExist", err)
	}
}
