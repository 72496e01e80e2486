package experiments

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/layercrawl/layercrawl/internal/mutate"
	"github.com/layercrawl/layercrawl/neardup"
	"github.com/layercrawl/layercrawl/storage"
)

// SimilarityConfig configures RunSimilarity.
type SimilarityConfig struct {
	// WARC are WARC files, or directories searched for *.warc.gz, whose
	// 2xx HTML responses are the corpus. Required.
	WARC []string
	// Pages is the number of distinct pages kept (the first read with at
	// least MinWords words and a shingle set not seen before); default
	// 1000.
	Pages int
	// MinWords is the least visible words of a page kept; default 50.
	MinWords int
	// Rates are the word edit rates of the mutated copies; default 1, 5,
	// 10, 20 and 40%.
	Rates []float64
	// Sizes are the collection sizes at which query time is measured;
	// default 1,000, 10,000 and 100,000.
	Sizes []int
	// BytesPerPage is the memory per page every method is given (the
	// sketch and column bits; simhash has 8 bytes by definition); default
	// 256.
	BytesPerPage int
	// Threshold is the estimated resemblance at which a method reports a
	// pair; default 0.7.
	Threshold float64
	// LinearMaxSize is the largest collection at which the methods whose
	// query scans every page (sdhash, pmbf) are timed; default 10,000.
	LinearMaxSize int
	Seed          uint64
	OutDir        string
	Command       string
	Log           io.Writer // progress messages; nil: none
}

// SimilarityRow is one line of similarity.csv: a method's counts for one
// kind of copy, or its cost figures (Kind "cost") or query time at a
// collection size (Kind "query").
type SimilarityRow struct {
	Method          string
	Kind            string  // "edit", "move", "boilerplate", "cost", "query"
	Rate            float64 // edit rate of "edit" rows
	TP, FP, Grey    int     // reported pairs of true resemblance >= 0.8, < 0.5, in between
	Positives       int     // pairs of true resemblance >= 0.8
	Precision       float64 // TP / (TP + FP)
	Recall          float64 // TP / Positives
	F1              float64
	BytesPerPage    float64 // "cost": the index's SizeBytes per page
	DigestMBps      float64 // "cost": pages digested and added, MB of HTML per second
	SHA1MBps        float64 // "cost": SHA-1 over the same bytes
	N               int     // "query": collection size
	QueryNs         float64 // "query": mean time of a query
	ThresholdUsed   float64
	ThresholdSource string
}

// page is one corpus page.
type simPage struct {
	html  []byte
	words []string
	doc   *neardup.Doc
}

// similarityMethods makes the methods at bytesPerPage each; avgShingles
// sizes the PMBF's rows to the same bits per page.
func similarityMethods(bytesPerPage int, avgShingles float64) (map[string]neardup.Index, []string, map[string]string, error) {
	k := bytesPerPage / 4 * 3 / 4 // Sliced: 3/4 of the bytes to the sketch, 1/4 to the column
	sl, err := neardup.NewSliced(neardup.SlicedOptions{SketchSize: min(k, 255), ColumnBits: max(64, bytesPerPage*8/4)})
	if err != nil {
		return nil, nil, nil, err
	}
	hashes := bytesPerPage / 4
	bands := 16
	for hashes%bands != 0 || hashes/bands < 2 {
		bands--
	}
	mh, err := neardup.NewMinHash(neardup.MinHashOptions{Hashes: hashes, Bands: bands})
	if err != nil {
		return nil, nil, nil, err
	}
	// MinHash with one permutation hashing, the crawler's method: the
	// signature and band tables together at about bytesPerPage (4 bytes
	// per value, 12-20 per band of 4 values).
	ophHashes := max(4, bytesPerPage/8/4*4)
	oph, err := neardup.NewMinHash(neardup.MinHashOptions{Hashes: ophHashes, Bands: ophHashes / 4, OnePermutation: true})
	if err != nil {
		return nil, nil, nil, err
	}
	bitsPerShingle := float64(bytesPerPage*8) / math.Max(1, avgShingles)
	p := math.Min(0.5, math.Exp(-bitsPerShingle*math.Ln2*math.Ln2))
	pm, err := neardup.NewPMBF(neardup.PMBFOptions{FalsePositiveRate: p})
	if err != nil {
		return nil, nil, nil, err
	}
	notes := map[string]string{
		"sliced":  fmt.Sprintf("bit-sliced PMBF: bottom-%d sketch (%d B) + %d-bit column", min(k, 255), 4*min(k, 255), max(64, bytesPerPage*8/4)),
		"minhash": fmt.Sprintf("MinHash, %d values (%d B), LSH %d bands of %d", hashes, 4*hashes, bands, hashes/bands),
		"minhash-oph": fmt.Sprintf("MinHash by one permutation hashing (one hash per shingle), %d values (%d B), LSH %d bands of 4; the crawler's method",
			ophHashes, 4*ophHashes, ophHashes/4),
		"pmbf":    fmt.Sprintf("paper PMBF, 32768-bit rows sized at p = %.3g: %.1f bits per shingle (%.0f shingles per page on average)", p, bitsPerShingle, avgShingles),
		"sdhash":  "sdhash-style digest: 256-byte filters of <= 160 features (size follows the text)",
		"simhash": "simhash, 64-bit fingerprint (8 B)",
	}
	names := []string{"minhash-oph", "sliced", "minhash", "simhash", "sdhash", "pmbf"}
	return map[string]neardup.Index{"minhash-oph": oph, "sliced": sl, "minhash": mh, "simhash": neardup.NewSimHash(), "sdhash": neardup.NewSDHash(), "pmbf": pm}, names, notes, nil
}

// readSimilarityCorpus reads the HTML pages of the WARC files.
func readSimilarityCorpus(cfg SimilarityConfig) ([]simPage, int, error) {
	var files []string
	for _, p := range cfg.WARC {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, 0, fmt.Errorf("experiments: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".warc.gz") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			return nil, 0, fmt.Errorf("experiments: %w", err)
		}
	}
	slices.Sort(files)
	seen := map[uint64]bool{}
	var pages []simPage
	responses := 0
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, fmt.Errorf("experiments: %w", err)
		}
		r := storage.NewWARCReader(f)
		for len(pages) < cfg.Pages {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) || errors.Is(err, storage.ErrTruncated) {
				break
			}
			if err != nil {
				f.Close()
				return nil, 0, fmt.Errorf("experiments: %s: %w", name, err)
			}
			if rec.Header.Get("WARC-Type") != "response" {
				continue
			}
			head, body, ok := storage.HTTPPayload(rec.Block)
			if !ok || !isHTMLResponse(head) {
				continue
			}
			responses++
			doc := neardup.NewDoc(body)
			words := neardup.Words(doc.Text)
			if len(words) < cfg.MinWords {
				continue
			}
			key := shingleKey(doc.Shingles)
			if seen[key] {
				continue
			}
			seen[key] = true
			pages = append(pages, simPage{html: body, words: words, doc: doc})
		}
		f.Close()
		if len(pages) >= cfg.Pages {
			break
		}
	}
	if len(pages) == 0 {
		return nil, responses, fmt.Errorf("experiments: no HTML page of %d words in %v: %w", cfg.MinWords, cfg.WARC, ErrNoData)
	}
	return pages, responses, nil
}

func shingleKey(sh []uint64) uint64 {
	h := uint64(len(sh))
	for _, s := range sh {
		h = h*0x100000001b3 ^ s
	}
	return h
}

// isHTMLResponse reports whether an HTTP response head is a 2xx HTML one.
func isHTMLResponse(head []byte) bool {
	lines := strings.Split(string(head), "\r\n")
	if len(lines) == 0 || !strings.Contains(lines[0], " 2") {
		return false
	}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Content-Type") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(v))
			return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
		}
	}
	return false
}

// simQuery is a mutated copy of a page with its ground truth.
type simQuery struct {
	kind   string
	rate   float64
	doc    *neardup.Doc
	truth  map[uint64]float64 // exact resemblance to every page it is >= 0.5 like
	source int
}

func docOfWords(words []string) *neardup.Doc {
	text := strings.Join(words, " ")
	return &neardup.Doc{Text: text, Shingles: neardup.Shingles(text, 0)}
}

// makeQueries makes the mutated copies: word edits at every rate, a moved
// paragraph, changed boilerplate (the first and last tenth of the words
// replaced).
func makeQueries(rng *rand.Rand, pages []simPage, vocab []string, rates []float64) []simQuery {
	var qs []simQuery
	for i, p := range pages {
		for _, r := range rates {
			qs = append(qs, simQuery{kind: "edit", rate: r, source: i, doc: docOfWords(mutate.Words(rng, p.words, vocab, r))})
		}
		paras := chunk(p.words, 10)
		qs = append(qs, simQuery{kind: "move", source: i, doc: docOfWords(strings.Fields(strings.Join(mutate.MoveParagraph(rng, paras), " ")))})
		w := append([]string(nil), p.words...)
		n := len(w) / 10
		for j := range n {
			w[j] = vocab[rng.IntN(len(vocab))]
			w[len(w)-1-j] = vocab[rng.IntN(len(vocab))]
		}
		qs = append(qs, simQuery{kind: "boilerplate", source: i, doc: docOfWords(w)})
	}
	return qs
}

// chunk splits words into n paragraphs of about equal length.
func chunk(words []string, n int) []string {
	var out []string
	size := max(1, (len(words)+n-1)/n)
	for i := 0; i < len(words); i += size {
		out = append(out, strings.Join(words[i:min(i+size, len(words))], " "))
	}
	return out
}

// RunSimilarity runs the experiment and writes similarity.csv, the plots
// and report.md to cfg.OutDir.
func RunSimilarity(ctx context.Context, cfg SimilarityConfig) ([]SimilarityRow, error) {
	if cfg.Pages == 0 {
		cfg.Pages = 1000
	}
	if cfg.MinWords == 0 {
		cfg.MinWords = 50
	}
	if len(cfg.Rates) == 0 {
		cfg.Rates = []float64{0.01, 0.05, 0.10, 0.20, 0.40}
	}
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = []int{1000, 10000, 100000}
	}
	if cfg.BytesPerPage == 0 {
		cfg.BytesPerPage = 256
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = 0.7
	}
	if cfg.LinearMaxSize == 0 {
		cfg.LinearMaxSize = 10000
	}
	switch {
	case len(cfg.WARC) == 0:
		return nil, fmt.Errorf("%w: no WARC input", ErrInvalidOptions)
	case cfg.Pages < 1 || cfg.BytesPerPage < 32 || cfg.Threshold <= 0 || cfg.Threshold > 1:
		return nil, fmt.Errorf("%w: pages %d, bytes per page %d, threshold %g", ErrInvalidOptions, cfg.Pages, cfg.BytesPerPage, cfg.Threshold)
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	start := time.Now()
	pages, responses, err := readSimilarityCorpus(cfg)
	if err != nil {
		return nil, err
	}
	var vocabSet = map[string]bool{}
	var vocab []string
	shingles := 0
	for _, p := range pages {
		shingles += len(p.doc.Shingles)
		for _, w := range p.words {
			if !vocabSet[w] {
				vocabSet[w] = true
				vocab = append(vocab, w)
			}
		}
	}
	avgShingles := float64(shingles) / float64(len(pages))
	logf("corpus: %d distinct pages of %d HTML responses, %.0f shingles per page, vocabulary %d", len(pages), responses, avgShingles, len(vocab))
	rng := rand.New(rand.NewPCG(cfg.Seed, 14))
	queries := makeQueries(rng, pages, vocab, cfg.Rates)
	// Ground truth: the exact resemblance of every copy to every page.
	for qi := range queries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q := &queries[qi]
		q.truth = map[uint64]float64{}
		for j, p := range pages {
			if r := neardup.Resemblance(q.doc.Shingles, p.doc.Shingles); r >= 0.5 {
				q.truth[uint64(j)] = r
			}
		}
	}
	logf("%d copies, ground truth in %v", len(queries), time.Since(start).Round(time.Millisecond))

	indexes, names, notes, err := similarityMethods(cfg.BytesPerPage, avgShingles)
	if err != nil {
		return nil, err
	}
	var rows []SimilarityRow
	var htmlBytes int
	for _, p := range pages {
		htmlBytes += len(p.html)
	}
	sha := measure(func() {
		for _, p := range pages {
			sha1.Sum(p.html)
		}
	})
	for _, name := range names {
		idx := indexes[name]
		// Digest throughput: the crawler's whole per-page work, from HTML.
		d := measure(func() {
			for j, p := range pages {
				idx.Add(uint64(j), neardup.NewDoc(p.html))
			}
		})
		rows = append(rows, SimilarityRow{Method: name, Kind: "cost", BytesPerPage: float64(idx.SizeBytes()) / float64(idx.Len()),
			DigestMBps: float64(htmlBytes) / 1e6 / d.Seconds(), SHA1MBps: float64(htmlBytes) / 1e6 / sha.Seconds()})
		thr, src := cfg.Threshold, "--threshold"
		rows = append(rows, qualityRows(name, idx, queries, cfg.Rates, thr, src)...)
		if name == "simhash" {
			// Manku et al.'s operating point: Hamming distance <= 3.
			rows = append(rows, qualityRows("simhash-h3", idx, queries, cfg.Rates, neardup.SimHashResemblance(3), "Hamming <= 3")...)
		}
		logf("%s: quality measured (%v)", name, time.Since(start).Round(time.Millisecond))
	}
	qrows, err := queryTimes(ctx, cfg, pages, vocab, names, avgShingles, logf)
	if err != nil {
		return nil, err
	}
	rows = append(rows, qrows...)
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if err := writeFile(filepath.Join(cfg.OutDir, "similarity.csv"), func(w io.Writer) error { return writeSimilarityCSV(w, rows) }); err != nil {
		return nil, err
	}
	figs, err := similarityFigures(rows)
	if err != nil {
		return nil, err
	}
	files, err := WriteFigures(cfg.OutDir, figs)
	if err != nil {
		return nil, err
	}
	rep := similarityReport(cfg, rows, notes, len(pages), responses, avgShingles, files, time.Since(start))
	if err := writeText(filepath.Join(cfg.OutDir, "report.md"), rep); err != nil {
		return nil, err
	}
	logf("wrote %s", cfg.OutDir)
	return rows, nil
}

func measure(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// qualityRows queries idx with every copy and counts, per kind and rate,
// the reported pairs by true resemblance.
func qualityRows(name string, idx neardup.Index, queries []simQuery, rates []float64, thr float64, src string) []SimilarityRow {
	type key struct {
		kind string
		rate float64
	}
	acc := map[key]*SimilarityRow{}
	var order []key
	for _, q := range queries {
		k := key{q.kind, q.rate}
		r := acc[k]
		if r == nil {
			r = &SimilarityRow{Method: name, Kind: q.kind, Rate: q.rate, ThresholdUsed: thr, ThresholdSource: src}
			acc[k] = r
			order = append(order, k)
		}
		reported := map[uint64]bool{}
		for _, m := range idx.Query(q.doc, thr) {
			reported[m.ID] = true
			switch t := q.truth[m.ID]; {
			case t >= 0.8:
				r.TP++
			case t < 0.5:
				r.FP++
			default:
				r.Grey++
			}
		}
		for _, t := range q.truth {
			if t >= 0.8 {
				r.Positives++
			}
		}
	}
	out := make([]SimilarityRow, 0, len(order))
	for _, k := range order {
		r := acc[k]
		r.Precision = ratio(r.TP, r.TP+r.FP)
		r.Recall = ratio(r.TP, r.Positives)
		if r.Precision+r.Recall > 0 {
			r.F1 = 2 * r.Precision * r.Recall / (r.Precision + r.Recall)
		}
		out = append(out, *r)
	}
	return out
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// queryTimes grows a collection of every method to each of cfg.Sizes with
// copies of the first 400 words of the corpus pages, edited at 40%
// (resembling their page about 0.2), and times queries of 5% copies. The
// linear methods (sdhash, pmbf) stop at cfg.LinearMaxSize.
func queryTimes(ctx context.Context, cfg SimilarityConfig, pages []simPage, vocab []string, names []string, avgShingles float64, logf func(string, ...any)) ([]SimilarityRow, error) {
	indexes, _, _, err := similarityMethods(cfg.BytesPerPage, avgShingles)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 15))
	probes := make([]*neardup.Doc, 0, 50)
	for range cap(probes) {
		probes = append(probes, docOfWords(mutate.Words(rng, pages[rng.IntN(len(pages))].words, vocab, 0.05)))
	}
	var rows []SimilarityRow
	n := 0
	sizes := slices.Clone(cfg.Sizes)
	slices.Sort(sizes)
	for _, size := range sizes {
		for ; n < size; n++ {
			if n%1000 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			w := pages[n%len(pages)].words
			d := docOfWords(mutate.Words(rng, w[:min(len(w), 400)], vocab, 0.4))
			for _, name := range names {
				if n < cfg.LinearMaxSize || !linearMethod(name) {
					indexes[name].Add(uint64(n), d)
				}
			}
		}
		for _, name := range names {
			idx := indexes[name]
			if size > cfg.LinearMaxSize && linearMethod(name) {
				continue
			}
			reps := 1
			var el time.Duration
			for el < 200*time.Millisecond && reps < 1<<12 {
				el = measure(func() {
					for range reps {
						for _, q := range probes {
							idx.Query(q, cfg.Threshold)
						}
					}
				})
				if el < 200*time.Millisecond {
					reps *= 4
				}
			}
			rows = append(rows, SimilarityRow{Method: name, Kind: "query", N: size, QueryNs: float64(el.Nanoseconds()) / float64(reps*len(probes)), ThresholdUsed: cfg.Threshold})
		}
		logf("query times at %d pages measured", size)
	}
	return rows, nil
}

// linearMethod reports whether a method's query compares with every page.
func linearMethod(name string) bool { return name == "sdhash" || name == "pmbf" }

func writeSimilarityCSV(w io.Writer, rows []SimilarityRow) error {
	var b strings.Builder
	b.WriteString("method,kind,rate,tp,fp,grey,positives,precision,recall,f1,bytes_per_page,digest_mb_per_s,sha1_mb_per_s,n,query_ns,threshold\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%g,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.1f,%.2f,%.1f,%d,%.0f,%.4f\n", r.Method, r.Kind, r.Rate, r.TP, r.FP, r.Grey, r.Positives,
			r.Precision, r.Recall, r.F1, r.BytesPerPage, r.DigestMBps, r.SHA1MBps, r.N, r.QueryNs, r.ThresholdUsed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// similarityFigures draws precision, recall and F1 against the edit rate,
// and query time against the collection size.
func similarityFigures(rows []SimilarityRow) ([]Figure, error) {
	var methods []string
	for _, r := range rows {
		if r.Kind == "edit" && !slices.Contains(methods, r.Method) {
			methods = append(methods, r.Method)
		}
	}
	var figs []Figure
	for _, metric := range []string{"f1", "precision", "recall"} {
		title := map[string]string{"f1": "F1", "precision": "Precision", "recall": "Recall"}[metric] + " vs edit rate (pairs of resemblance >= 0.8)"
		p, leg := newPlot(title, "words edited (%)", metric)
		for i, m := range methods {
			var xys plotter.XYs
			for _, r := range rows {
				if r.Method == m && r.Kind == "edit" {
					y := map[string]float64{"f1": r.F1, "precision": r.Precision, "recall": r.Recall}[metric]
					if !math.IsNaN(y) {
						xys = append(xys, plotter.XY{X: 100 * r.Rate, Y: y})
					}
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, fmt.Errorf("experiments: plot: %w", err)
			}
			l.Color, pts.Color, pts.Shape = structColor(i), structColor(i), plotutil.Shape(i)
			p.Add(l, pts)
			leg.Add(m, l, pts)
		}
		p.Y.Min, p.Y.Max = 0, 1.05
		figs = append(figs, Figure{Name: "similarity_" + metric + "_vs_edit_rate", Title: title, plot: p, legend: leg})
	}
	title := "Query time vs collection size"
	p, leg := newPlot(title, "pages in the index", "µs per query (log)")
	i := 0
	for _, m := range methods {
		var xys plotter.XYs
		for _, r := range rows {
			if r.Method == m && r.Kind == "query" {
				xys = append(xys, plotter.XY{X: float64(r.N), Y: r.QueryNs / 1000})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("experiments: plot: %w", err)
		}
		l.Color, pts.Color, pts.Shape = structColor(i), structColor(i), plotutil.Shape(i)
		p.Add(l, pts)
		leg.Add(m, l, pts)
		i++
	}
	logY(p)
	figs = append(figs, Figure{Name: "similarity_query_time_vs_n", Title: title, plot: p, legend: leg})
	return figs, nil
}

func similarityReport(cfg SimilarityConfig, rows []SimilarityRow, notes map[string]string, pages, responses int, avgShingles float64, files []string, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Similarity experiment report\n\nCommand:\n\n```sh\n%s\n```\n\n", cfg.Command)
	m := DescribeMachine(context.Background())
	fmt.Fprintf(&b, "Machine: %s, %d cores, %s; commit %s; seed %d; run time %v; load average at end %s.\n\n", m.CPUModel, m.Cores, m.GoVersion, m.Commit, cfg.Seed, took.Round(time.Second), LoadAverage())
	fmt.Fprintf(&b, "Corpus: %d distinct HTML pages (of %d HTML responses read) from %s, %.0f shingles (4 words) per page on average. ", pages, responses, strings.Join(cfg.WARC, ", "), avgShingles)
	fmt.Fprintf(&b, "Each page gets copies with %s of its words inserted, deleted or substituted, one with a paragraph (a tenth of the text) moved, and one with its first and last tenth replaced (boilerplate). Ground truth is the exact Jaccard resemblance of the shingle sets of each copy and every page. A reported pair is a true positive at resemblance >= 0.8 and a false positive below 0.5; pairs in between count as neither. Methods report pairs at an estimated resemblance >= %g.\n\n", rateList(cfg.Rates), cfg.Threshold)
	b.WriteString("## Methods at equal memory per page\n\n| method | configuration | bytes per page (SizeBytes/Len) | digest MB/s (HTML, extraction included) | SHA-1 MB/s |\n|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		if r.Kind == "cost" {
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.2f | %.0f |\n", r.Method, notes[r.Method], r.BytesPerPage, r.DigestMBps, r.SHA1MBps)
		}
	}
	b.WriteString("\nBytes per page include ids and, for MinHash, the band tables' entries; the sketches themselves are the configured size.\n\n")
	b.WriteString("## Precision, recall, F1\n\n| method | copy | TP | FP | grey | positives | precision | recall | F1 |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		if r.Kind == "edit" || r.Kind == "move" || r.Kind == "boilerplate" {
			copyName := r.Kind
			if r.Kind == "edit" {
				copyName = fmt.Sprintf("edit %g%%", 100*r.Rate)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %.4f | %.4f | %.4f |\n", r.Method, copyName, r.TP, r.FP, r.Grey, r.Positives, r.Precision, r.Recall, r.F1)
		}
	}
	b.WriteString("\n## Overall (all copies)\n\n| method | TP | FP | positives | precision | recall | F1 |\n|---|---:|---:|---:|---:|---:|---:|\n")
	var methods []string
	for _, r := range rows {
		if r.Kind != "cost" && r.Kind != "query" && !slices.Contains(methods, r.Method) {
			methods = append(methods, r.Method)
		}
	}
	for _, mth := range methods {
		var tp, fp, pos int
		for _, r := range rows {
			if r.Method == mth && r.Kind != "cost" && r.Kind != "query" {
				tp, fp, pos = tp+r.TP, fp+r.FP, pos+r.Positives
			}
		}
		p, rc := ratio(tp, tp+fp), ratio(tp, pos)
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.4f | %.4f | %.4f |\n", mth, tp, fp, pos, p, rc, 2*p*rc/(p+rc))
	}
	fmt.Fprintf(&b, "\n## Query time\n\nCollections grown with copies of the first 400 words of the corpus pages edited at 40%%; queries are 5%% copies. sdhash and pmbf, whose queries compare with every page, are timed up to %d pages.\n\n| method |", cfg.LinearMaxSize)
	var sizes []int
	for _, r := range rows {
		if r.Kind == "query" && !slices.Contains(sizes, r.N) {
			sizes = append(sizes, r.N)
		}
	}
	for _, n := range sizes {
		fmt.Fprintf(&b, " %d pages (µs) |", n)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(sizes)) + "\n")
	for _, mth := range methods {
		line := "| " + mth + " |"
		found := false
		for _, n := range sizes {
			for _, r := range rows {
				if r.Kind == "query" && r.Method == mth && r.N == n {
					line += fmt.Sprintf(" %.1f |", r.QueryNs/1000)
					found = true
				}
			}
		}
		if found {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("\nFiles: similarity.csv")
	for _, f := range files {
		b.WriteString(", " + f)
	}
	b.WriteString("\n")
	return b.String()
}

func rateList(rates []float64) string {
	s := make([]string, len(rates))
	for i, r := range rates {
		s[i] = fmt.Sprintf("%g%%", 100*r)
	}
	return strings.Join(s, ", ")
}
