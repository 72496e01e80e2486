package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWARCWriteRevisit(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWARCWriter(dir, WARCOptions{Prefix: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ex := testExchanges(1)[0]
	ref, err := w.Write(ex)
	if err != nil {
		t.Fatal(err)
	}
	again := *ex
	again.TargetURI = "http://mirror.example/path"
	again.Date = ex.Date.Add(time.Hour)
	rref, err := w.WriteRevisit(&again, Revisit{TargetURI: ex.TargetURI, Date: ex.Date, RecordID: ref.ResponseID})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Revisit{{}, {TargetURI: "http://x/"}, {TargetURI: "http://x/ y", Date: ex.Date}, {TargetURI: "http://x/", Date: ex.Date, RecordID: "a\nb"}} {
		if _, err := w.WriteRevisit(&again, bad); !errors.Is(err, ErrInvalidExchange) {
			t.Errorf("WriteRevisit(%+v) = %v, want ErrInvalidExchange", bad, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := readWARCDir(t, dir)
	if len(files) != 1 {
		t.Fatalf("got %d files", len(files))
	}
	recs := files[0].records
	// warcinfo, request, response, metadata, request, revisit, metadata
	// (the exchange carries outlinks, and a revisit keeps them): the bad
	// revisits wrote nothing.
	if len(recs) != 7 {
		t.Fatalf("got %d records, want 7", len(recs))
	}
	if recs[6].Header.Get("WARC-Type") != "metadata" || recs[6].Header.Get("WARC-Concurrent-To") != rref.ResponseID {
		t.Errorf("the revisit's metadata record: %v", recs[6].Header)
	}
	rv := recs[5]
	want := map[string]string{
		"WARC-Type":                 "revisit",
		"WARC-Record-ID":            rref.ResponseID,
		"WARC-Target-URI":           again.TargetURI,
		"WARC-Profile":              RevisitProfile,
		"WARC-Refers-To":            ref.ResponseID,
		"WARC-Refers-To-Target-URI": ex.TargetURI,
		"WARC-Refers-To-Date":       "2026-11-21T17:00:00.123456Z",
		"WARC-Payload-Digest":       recs[2].Header.Get("WARC-Payload-Digest"),
		"WARC-Concurrent-To":        rref.RequestID,
	}
	for k, v := range want {
		if got := rv.Header.Get(k); got != v {
			t.Errorf("revisit %s = %q, want %q", k, got, v)
		}
	}
	head, payload, ok := HTTPPayload(rv.Block)
	if !ok || len(payload) != 0 || !bytes.HasPrefix(head, []byte("HTTP/1.1 200 OK\r\n")) {
		t.Errorf("revisit block %q: want the response head alone", rv.Block)
	}
	if got := PayloadDigest(ex.Body); rv.Header.Get("WARC-Payload-Digest") != got {
		t.Errorf("revisit payload digest %q, want %q", rv.Header.Get("WARC-Payload-Digest"), got)
	}
	fi, err := os.Stat(filepath.Join(dir, files[0].name))
	if err != nil {
		t.Fatal(err)
	}
	if rref.Offset+rref.Length != fi.Size() {
		t.Errorf("revisit ref ends at %d, file is %d bytes", rref.Offset+rref.Length, fi.Size())
	}
}
