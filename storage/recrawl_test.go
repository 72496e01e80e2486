package storage

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestWriteRevisitNotModified checks a server-not-modified revisit: the
// 304's head as its block, the profile, the fields naming the earlier
// response, and ResponseOffset pointing at the revisit's gzip member.
func TestWriteRevisitNotModified(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := testExchanges(1)[0]
	ref0, err := w.Write(first)
	if err != nil {
		t.Fatal(err)
	}
	notMod := &Exchange{TargetURI: first.TargetURI, Date: first.Date.Add(time.Hour), RequestHead: first.RequestHead,
		Response:      []byte("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n"),
		PayloadDigest: PayloadDigest(first.Body)}
	of := Revisit{TargetURI: first.TargetURI, Date: first.Date, RecordID: ref0.ResponseID, Profile: RevisitNotModified}
	ref1, err := w.WriteRevisit(notMod, of)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteRevisit(notMod, Revisit{TargetURI: "http://x/", Date: first.Date, Profile: "http://example/other"}); !errors.Is(err, ErrInvalidExchange) {
		t.Errorf("unknown profile: %v, want ErrInvalidExchange", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	byID := make(map[string]*WARCRecord)
	for _, r := range files[0].records {
		byID[r.Header.Get("WARC-Record-ID")] = r
	}
	for _, ref := range []WARCRef{ref0, ref1} {
		r := byID[ref.ResponseID]
		if r == nil || r.Offset != ref.ResponseOffset {
			t.Fatalf("record %s: offset %v, ResponseOffset %d", ref.ResponseID, r, ref.ResponseOffset)
		}
	}
	rv := byID[ref1.ResponseID]
	for name, want := range map[string]string{
		"WARC-Type":                 "revisit",
		"WARC-Profile":              RevisitNotModified,
		"WARC-Refers-To":            ref0.ResponseID,
		"WARC-Refers-To-Target-URI": first.TargetURI,
		"WARC-Refers-To-Date":       byID[ref0.ResponseID].Header.Get("WARC-Date"),
		"WARC-Payload-Digest":       byID[ref0.ResponseID].Header.Get("WARC-Payload-Digest"),
	} {
		if got := rv.Header.Get(name); got != want {
			t.Errorf("%s %q, want %q", name, got, want)
		}
	}
	if string(rv.Block) != string(notMod.Response) {
		t.Errorf("block %q, want the 304 %q", rv.Block, notMod.Response)
	}
}

// TestOpenReadOnly checks that a read-only open reads the store, refuses
// writes, changes no file, and refuses a directory without a store.
func TestOpenReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(func(w Writer) error { return w.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ro.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Errorf("Get: %q, %v", v, err)
	}
	// Another reader at once (the workers of a Redis crawl read one
	// earlier crawl's state together): pebble's own lock is exclusive.
	ro2, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("second read-only open: %v", err)
	}
	if v, err := ro2.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Errorf("second reader's Get: %q, %v", v, err)
	}
	if err := ro2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Write(func(w Writer) error { return w.Set([]byte("k"), []byte("w")) }); err == nil {
		t.Errorf("Write on a read-only store succeeded")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after := listDir(t, dir); !slices.Equal(before, after) {
		t.Errorf("read-only open changed the directory:\n before %v\n after  %v", before, after)
	}
	empty := t.TempDir()
	if _, err := Open(empty, Options{ReadOnly: true}); !errors.Is(err, ErrForeign) {
		t.Errorf("read-only open of an empty directory: %v, want ErrForeign", err)
	}
}

// listDir returns dir's file names with their sizes and times, but for
// pebble's LOCK file, which a read-only open locks too (its time changes,
// its contents do not).
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Name()+" "+fi.ModTime().String()+" "+strconv.FormatInt(fi.Size(), 10))
	}
	return out
}
