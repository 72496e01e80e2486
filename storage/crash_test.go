package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestCrashWARCAndLog runs a child process that writes exchanges to a WARC
// writer and, after each, a crawl-log line naming the response record (the
// order a crawler uses), kills it with SIGKILL at varying moments, and checks
// what a resumed crawl would find: every WARC file reads as whole records,
// possibly ending in one torn record; the log reopens (torn last line
// removed) and reads cleanly; and every logged record is whole in the WARC
// files. Each round resumes in the same directory, so rounds also check that
// a new writer never appends to a torn file.
func TestCrashWARCAndLog(t *testing.T) {
	if dir := os.Getenv("STORAGE_CRASH_CHILD"); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWARCAndLog$")
		cmd.Env = append(os.Environ(), "STORAGE_CRASH_CHILD="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+70*round) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		records := map[string]bool{} // response record IDs that are whole
		torn := 0
		files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
		for _, p := range files {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			r := NewWARCReader(f)
			for {
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if errors.Is(err, ErrTruncated) {
					torn++ // the crash tore the last record
					break
				}
				if err != nil {
					t.Fatalf("round %d: %s: %v", round, filepath.Base(p), err)
				}
				if rec.Header.Get("WARC-Type") == "response" {
					records[rec.Header.Get("WARC-Record-ID")] = true
				}
			}
			f.Close()
		}

		l, err := OpenCrawlLog(filepath.Join(dir, "crawl.log.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, "crawl.log.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		err = ReadCrawlLog(f, func(e Entry) error {
			lines++
			if !records[e.WARCRecordID] {
				return fmt.Errorf("log line %d names %s, which is not a whole record in %s", lines, e.WARCRecordID, e.WARCFile)
			}
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		t.Logf("round %d: %d WARC files (%d ending torn), %d whole responses, %d log lines", round, len(files), torn, len(records), lines)
	}
}

// crashChild writes until it is killed.
func crashChild(dir string) {
	w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{Prefix: "crash", MaxFileSize: 256 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	l, err := OpenCrawlLog(filepath.Join(dir, "crawl.log.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		for _, ex := range testExchanges(uint64(i)) {
			ref, err := w.Write(ex)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if err := l.Write(Entry{URL: ex.TargetURI, Status: 200, WARCFile: ref.File, WARCRecordID: ref.ResponseID}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if err := l.Flush(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
	}
}
