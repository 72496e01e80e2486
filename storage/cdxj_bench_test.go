package storage

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkIndexWARCs indexes 20,000 exchanges (40,000 records, 20,000
// indexed) sorted in memory and, with a 1 MiB limit, through runs merged
// from disk.
func BenchmarkIndexWARCs(b *testing.B) {
	dir := b.TempDir()
	w, err := NewWARCWriter(filepath.Join(dir, "warc"), WARCOptions{Prefix: "bench", GzipLevel: 1})
	if err != nil {
		b.Fatal(err)
	}
	const n = 20000
	exs := testExchanges(1)
	for i := range n {
		ex := *exs[i%len(exs)]
		ex.TargetURI = fmt.Sprintf("http://h%d.example/p/%d?q=%d", i%97, i, i%13)
		if _, err := w.Write(&ex); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	files, err := CrawlWARCFiles(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		limit int64
	}{{"memory", 0}, {"runs-1MiB", 1 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				st, err := IndexWARCs(context.Background(), io.Discard, files, IndexOptions{MemoryLimit: c.limit, TempDir: b.TempDir()})
				if err != nil || st.Records != n {
					b.Fatalf("%+v, %v", st, err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
