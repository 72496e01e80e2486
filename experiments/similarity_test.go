package experiments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/internal/mutate"
	"github.com/layercrawl/layercrawl/storage"
)

// writeTestWARC writes n HTML pages of generated text (and a CSS file,
// which the experiment must skip) to a WARC file in dir.
func writeTestWARC(t *testing.T, dir string, n int) {
	t.Helper()
	w, err := storage.NewWARCWriter(dir, storage.WARCOptions{Prefix: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	vocab := mutate.Vocabulary(rng, 3000)
	add := func(path, ctype, body string) {
		u, _ := url.Parse("http://docs.test" + path)
		if _, err := w.Write(&storage.Exchange{TargetURI: u.String(), RequestHead: storage.RequestHead("GET", u, "", nil),
			ResponseHead: storage.ResponseHead("", 200, http.Header{"Content-Type": {ctype}}, len(body)), Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	add("/style.css", "text/css", "body { color: red }")
	for i := range n {
		add(fmt.Sprintf("/p%d.html", i), "text/html; charset=utf-8",
			"<html><body><p>"+strings.Join(mutate.Text(rng, vocab, 200+rng.IntN(200)), " ")+"</p></body></html>")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRunSimilarity(t *testing.T) {
	dir := t.TempDir()
	writeTestWARC(t, filepath.Join(dir, "warc"), 30)
	out := filepath.Join(dir, "out")
	rows, err := RunSimilarity(context.Background(), SimilarityConfig{
		WARC: []string{filepath.Join(dir, "warc")}, Pages: 25, Sizes: []int{50, 100}, LinearMaxSize: 50, OutDir: out, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	var quality, cost, query int
	for _, r := range rows {
		switch r.Kind {
		case "cost":
			cost++
			if r.BytesPerPage <= 0 || r.DigestMBps <= 0 || r.SHA1MBps <= 0 {
				t.Errorf("%s: cost row %+v", r.Method, r)
			}
		case "query":
			query++
		default:
			quality++
			if (r.Method == "sliced" || r.Method == "minhash-oph") && r.Kind == "edit" && r.Rate == 0.01 && (r.Positives != 25 || r.Recall < 0.95 || r.FP != 0) {
				t.Errorf("%s at 1%% edits: %+v", r.Method, r)
			}
		}
	}
	// 6 methods (+ simhash at Hamming 3) × 7 kinds of copy; 6 cost rows;
	// 4 sketch methods at 2 sizes and 2 linear ones at 1.
	if quality != 7*7 || cost != 6 || query != 4*2+2 {
		t.Errorf("%d quality, %d cost, %d query rows", quality, cost, query)
	}
	for _, f := range []string{"similarity.csv", "report.md", "similarity_f1_vs_edit_rate.png", "similarity_query_time_vs_n.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := RunSimilarity(context.Background(), SimilarityConfig{WARC: []string{filepath.Join(dir, "none")}, OutDir: out}); err == nil {
		t.Error("a missing WARC directory is not an error")
	}
	empty := t.TempDir()
	if _, err := RunSimilarity(context.Background(), SimilarityConfig{WARC: []string{empty}, OutDir: out}); !errors.Is(err, ErrNoData) {
		t.Errorf("no pages: %v, want ErrNoData", err)
	}
}
