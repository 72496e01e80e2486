// Command scalebench runs the scale benchmark (docs/bench-scale.sh): a synthetic web
// (internal/testweb/serve) in one process, a crawler in another, and a
// sampler reading the crawler's /metrics and /proc every second. It writes
// the samples, the crawl cut into tenths of its pages (pages per second,
// CPU per page, peak RSS, state and WARC bytes, the longest frontier
// update, the checkpoints) as CSV and a Markdown table, and plots them.
//
// Usage:
//
//	scalebench -serve BIN -crawler BIN -hosts 10000 -pages 1000000 -out DIR [flags] [-- crawler crawl flags]
//	scalebench -serve BIN -colly BIN -hosts 10000 -pages 100000 -out DIR [-parallelism N]
//
// With -colly the crawler is the plain colly program of
// internal/tools/collycrawl; only its pages, CPU and RSS are sampled.
// docs/bench-scale.sh runs both; docs/BENCHMARKS.md has the figures.
package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/layercrawl/layercrawl/crawl"
)

func main() {
	var (
		serveBin    = flag.String("serve", "", "the testweb server binary (go build ./internal/testweb/serve)")
		crawlerBin  = flag.String("crawler", "", "the crawler binary (go build ./cmd/crawler)")
		collyBin    = flag.String("colly", "", "instead of -crawler: the colly crawler binary (go build ./internal/tools/collycrawl)")
		hosts       = flag.Int("hosts", 10_000, "hosts of the web")
		pages       = flag.Int("pages", 1_000_000, "content pages of the web")
		seed        = flag.Uint64("seed", 1, "seed of the web")
		out         = flag.String("out", "", "output directory (required; the crawl goes to OUT/crawl)")
		interval    = flag.Duration("interval", time.Second, "sampling interval")
		concurrency = flag.Int("concurrency", 64, "crawler --concurrency, or colly Parallelism")
	)
	flag.Parse()
	if *serveBin == "" || *out == "" || (*crawlerBin == "") == (*collyBin == "") {
		fail(errors.New("need -serve, -out and one of -crawler and -colly"))
	}
	fail(os.MkdirAll(*out, 0o755))
	seeds := filepath.Join(*out, "seeds.txt")
	srv := exec.Command(*serveBin, "-hosts", strconv.Itoa(*hosts), "-pages", strconv.Itoa(*pages),
		"-seed", strconv.FormatUint(*seed, 10), "-seeds", seeds)
	srv.Stderr = os.Stderr
	stdout, err := srv.StdoutPipe()
	fail(err)
	fail(srv.Start())
	// The server shares this process's stderr: left running after a
	// failure, it would keep a caller that reads that stderr waiting.
	stopServer = func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }
	defer stopServer()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		fail(fmt.Errorf("serve: %q: %v", line, err))
	}
	fmt.Fprint(os.Stderr, "scalebench: serve ", line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	dir := filepath.Join(*out, "crawl")
	var cmd *exec.Cmd
	var addr string
	if *collyBin != "" {
		cmd = exec.Command(*collyBin, "-seeds", seeds, "-parallelism", strconv.Itoa(*concurrency))
	} else {
		addr, err = freeAddr()
		fail(err)
		args := []string{"crawl", "--seeds", seeds, "--out", dir, "--allow-private", "--delay", "-1",
			"--max-depth", "-1", "--progress-interval", "0", "--concurrency", strconv.Itoa(*concurrency),
			"--http-addr", addr}
		cmd = exec.Command(*crawlerBin, append(args, flag.Args()...)...)
	}
	log, err := os.Create(filepath.Join(*out, "crawler.stderr"))
	fail(err)
	defer log.Close()
	cmd.Stderr = log
	var collyOut *bufio.Reader
	if *collyBin != "" {
		p, err := cmd.StdoutPipe()
		fail(err)
		collyOut = bufio.NewReader(p)
	} else {
		cmd.Stdout = log
	}
	start := time.Now()
	fail(cmd.Start())
	done := make(chan error, 1)
	var collyPages atomicInt
	if collyOut != nil {
		go readCollyProgress(collyOut, &collyPages)
	}
	go func() { done <- cmd.Wait() }()

	var samples []sample
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-done:
			break loop
		case <-tick.C:
		}
		s := sample{T: time.Since(start).Seconds()}
		if !s.readProc(cmd.Process.Pid) {
			continue
		}
		if collyOut != nil {
			s.Pages = float64(collyPages.load())
		} else if err := s.readMetrics("http://" + addr + "/metrics"); err != nil {
			continue // not listening yet
		}
		s.StateBytes, s.WARCBytes = dirBytes(filepath.Join(dir, "state")), dirBytes(filepath.Join(dir, "warc"))
		samples = append(samples, s)
	}
	wall := time.Since(start)
	if waitErr != nil {
		fail(fmt.Errorf("crawler: %v (see %s)", waitErr, log.Name()))
	}
	if len(samples) < 10 {
		fail(fmt.Errorf("only %d samples: the crawl was too short to cut into tenths (lower -interval)", len(samples)))
	}
	// The last sample is taken at the end: the rusage of the exited
	// process and its final counters.
	last := samples[len(samples)-1]
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		last.T = wall.Seconds()
		last.CPU = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
		last.PeakRSS = float64(ru.Maxrss) * 1024
		last.StateBytes, last.WARCBytes = dirBytes(filepath.Join(dir, "state")), dirBytes(filepath.Join(dir, "warc"))
		if collyOut != nil {
			last.Pages = float64(collyPages.load())
		}
		samples = append(samples, last)
	}
	fail(writeSamples(filepath.Join(*out, "samples.csv"), samples))
	ws := windows(samples, 10)
	report := renderWindows(ws, samples, *collyBin != "")
	fail(os.WriteFile(filepath.Join(*out, "report.md"), []byte(report), 0o644))
	fmt.Print(report)
	if *collyBin == "" {
		fail(plotWindows(*out, samples, ws))
	}
}

// sample is one reading of the crawler.
type sample struct {
	T                     float64 // seconds since the start
	Pages                 float64 // attempts processed (layercrawl_pages_processed_total)
	Fetched               float64 // requests that reached a host
	New, Duplicates       float64 // discovered URLs
	Queued, Spilled       float64
	RSS, PeakRSS          float64 // bytes
	CPU                   float64 // user+system seconds
	StateBytes, WARCBytes float64
	DoneCount             float64
	DoneBuckets           []float64 // cumulative, over crawl.DoneBuckets()
	DoneMax               float64   // seconds, over the run
	Checkpoints, CkptSum  float64
	BlockedBounds         []float64
	BlockedBuckets        []float64 // cumulative
}

func (s *sample) readProc(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			kb, _ := strconv.ParseFloat(f[1], 64)
			if f[0] == "VmRSS:" {
				s.RSS = kb * 1024
			} else {
				s.PeakRSS = kb * 1024
			}
		}
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The fields after the command's closing parenthesis: utime and
	// stime are the 12th and 13th, in clock ticks (100 per second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return false
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.CPU = (ut + st) / 100
	return true
}

func (s *sample) readMetrics(url string) error {
	c := http.Client{Timeout: 5 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	// Legacy names: the stricter check, which every scraper accepts.
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return err
	}
	if fams["layercrawl_pages_processed_total"] == nil {
		return errors.New("not sampled yet")
	}
	val := func(name, label, value string) float64 {
		f := fams[name]
		if f == nil {
			return 0
		}
		for _, m := range f.Metric {
			if label == "" || hasLabel(m, label, value) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Untyped != nil:
					return m.Untyped.GetValue()
				}
			}
		}
		return 0
	}
	s.Pages = val("layercrawl_pages_processed_total", "", "")
	s.Fetched = val("layercrawl_pages_fetched_total", "", "")
	s.New = val("layercrawl_discovered_urls_total", "result", "new")
	s.Duplicates = val("layercrawl_discovered_urls_total", "result", "duplicate")
	s.Queued = val("layercrawl_queue_entries", "", "")
	s.Spilled = val("layercrawl_queue_entries_spilled", "", "")
	s.DoneMax = val("layercrawl_frontier_done_max_seconds", "", "")
	if h := histogram(fams, "layercrawl_frontier_done_duration_seconds"); h != nil {
		s.DoneCount = float64(h.GetSampleCount())
		for _, b := range h.Bucket {
			if !math.IsInf(b.GetUpperBound(), 1) {
				s.DoneBuckets = append(s.DoneBuckets, float64(b.GetCumulativeCount()))
			}
		}
	}
	if h := histogram(fams, "layercrawl_checkpoint_duration_seconds"); h != nil {
		s.Checkpoints, s.CkptSum = float64(h.GetSampleCount()), h.GetSampleSum()
	}
	if h := histogram(fams, "layercrawl_checkpoint_blocked_seconds"); h != nil {
		for _, b := range h.Bucket {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			s.BlockedBounds = append(s.BlockedBounds, b.GetUpperBound())
			s.BlockedBuckets = append(s.BlockedBuckets, float64(b.GetCumulativeCount()))
		}
	}
	return nil
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.Label {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

func histogram(fams map[string]*dto.MetricFamily, name string) *dto.Histogram {
	if f := fams[name]; f != nil && len(f.Metric) > 0 {
		return f.Metric[0].Histogram
	}
	return nil
}

// window is a tenth of the crawl's pages.
type window struct {
	From, To           sample
	PagesPerSec        float64
	CPUPerPage         float64 // seconds
	MaxRSS             float64
	DoneOver50ms       float64 // frontier updates above 50 ms in the window
	LongestDone        string  // the bucket bound every update of the window stayed under
	Checkpoints        float64
	CkptMean           float64 // seconds
	LongestBlocked     string
	BlockedOver50ms    float64 // checkpoints that held inserts over 50 ms (-1: no 50 ms bound in the histogram)
	DiscoveredPerPage  float64
	QueuedAtEnd        float64
	SpilledAtEnd       float64
	WARCBytes, StateAt float64
}

// windows cuts the samples at each tenth of the final page count.
func windows(ss []sample, n int) []window {
	total := ss[len(ss)-1].Pages
	var ws []window
	from := 0
	for w := 1; w <= n; w++ {
		target := total * float64(w) / float64(n)
		// A short crawl may finish several tenths between two samples:
		// those windows are then empty (from == to).
		to := min(from+1, len(ss)-1)
		for to < len(ss)-1 && ss[to].Pages < target {
			to++
		}
		a, b := ss[from], ss[to]
		win := window{From: a, To: b, QueuedAtEnd: b.Queued, SpilledAtEnd: b.Spilled, WARCBytes: b.WARCBytes, StateAt: b.StateBytes}
		if dt := b.T - a.T; dt > 0 {
			win.PagesPerSec = (b.Pages - a.Pages) / dt
		}
		if dp := b.Pages - a.Pages; dp > 0 {
			win.CPUPerPage = (b.CPU - a.CPU) / dp
			win.DiscoveredPerPage = (b.New + b.Duplicates - a.New - a.Duplicates) / dp
		}
		for _, s := range ss[from : to+1] {
			win.MaxRSS = math.Max(win.MaxRSS, s.RSS)
		}
		win.MaxRSS = math.Max(win.MaxRSS, b.PeakRSS*boolf(to == len(ss)-1))
		win.LongestDone, win.DoneOver50ms = longest(a.DoneBuckets, b.DoneBuckets, a.DoneCount, b.DoneCount, doneBounds())
		win.Checkpoints = b.Checkpoints - a.Checkpoints
		if win.Checkpoints > 0 {
			win.CkptMean = (b.CkptSum - a.CkptSum) / win.Checkpoints
		}
		var bc0, bc1 float64
		if len(a.BlockedBuckets) > 0 {
			bc0 = a.BlockedBuckets[len(a.BlockedBuckets)-1]
		}
		if len(b.BlockedBuckets) > 0 {
			bc1 = b.BlockedBuckets[len(b.BlockedBuckets)-1]
		}
		win.LongestBlocked, win.BlockedOver50ms = longest(a.BlockedBuckets, b.BlockedBuckets, bc0, bc1, b.BlockedBounds)
		if !slices.Contains(b.BlockedBounds, 0.05) {
			win.BlockedOver50ms = -1 // a crawler before the 50 ms bucket
		}
		ws = append(ws, win)
		from = to
	}
	return ws
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func doneBounds() []float64 {
	var b []float64
	for _, d := range crawl.DoneBuckets() {
		b = append(b, d.Seconds())
	}
	return b
}

// longest returns the smallest bucket bound that every observation
// between two cumulative readings stayed under, and how many exceeded
// 50 ms.
func longest(a, b []float64, ca, cb float64, bounds []float64) (string, float64) {
	n := cb - ca
	if len(b) == 0 || n <= 0 {
		return "-", 0
	}
	get := func(s []float64, i int) float64 {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	var over50 float64
	bound := ""
	for i := range b {
		if i < len(bounds) && bounds[i] == 0.05 {
			over50 = n - (get(b, i) - get(a, i))
		}
		if bound == "" && get(b, i)-get(a, i) >= n {
			bound = "≤ " + fmtSeconds(bounds[i])
		}
	}
	if bound == "" {
		bound = "> " + fmtSeconds(bounds[len(b)-1])
	}
	return bound, over50
}

func fmtSeconds(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%g µs", math.Round(s*1e7)/10)
	case s < 1:
		return fmt.Sprintf("%g ms", math.Round(s*1e4)/10)
	}
	return fmt.Sprintf("%g s", s)
}

func renderWindows(ws []window, ss []sample, colly bool) string {
	var b strings.Builder
	last := ss[len(ss)-1]
	fmt.Fprintf(&b, "%.0f pages in %.1f s (%.0f pages/s), %.1f CPU-s (%.3f ms/page), peak RSS %.0f MiB",
		last.Pages, last.T, last.Pages/last.T, last.CPU, last.CPU/last.Pages*1e3, last.PeakRSS/(1<<20))
	if !colly {
		fmt.Fprintf(&b, ", %.0f URLs discovered (%.0f new), %d checkpoints, longest frontier update %.1f ms",
			last.New+last.Duplicates, last.New, int(last.Checkpoints), last.DoneMax*1e3)
	}
	b.WriteString("\n\n")
	if colly {
		b.WriteString("| tenth | pages | pages/s | CPU ms/page | peak RSS MiB |\n|---|---|---|---|---|\n")
		for i, w := range ws {
			fmt.Fprintf(&b, "| %d | %.0f | %.0f | %.3f | %.0f |\n", i+1, w.To.Pages, w.PagesPerSec, w.CPUPerPage*1e3, w.MaxRSS/(1<<20))
		}
		return b.String()
	}
	b.WriteString("| tenth | pages | pages/s | CPU ms/page | peak RSS MiB | queued (spilled) | state MiB | WARC MiB | links/page | longest frontier update | updates > 50 ms | checkpoints (mean ms) | longest insert block | blocks > 50 ms |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, w := range ws {
		over := "-"
		if w.BlockedOver50ms >= 0 {
			over = fmt.Sprintf("%.0f", w.BlockedOver50ms)
		}
		fmt.Fprintf(&b, "| %d | %.0f | %.0f | %.3f | %.0f | %.0f (%.0f) | %.1f | %.1f | %.1f | %s | %.0f | %.0f (%.0f) | %s | %s |\n",
			i+1, w.To.Pages, w.PagesPerSec, w.CPUPerPage*1e3, w.MaxRSS/(1<<20), w.QueuedAtEnd, w.SpilledAtEnd,
			w.StateAt/(1<<20), w.WARCBytes/(1<<20), w.DiscoveredPerPage, w.LongestDone, w.DoneOver50ms,
			w.Checkpoints, w.CkptMean*1e3, w.LongestBlocked, over)
	}
	if ws[0].PagesPerSec > 0 {
		fmt.Fprintf(&b, "\nLast tenth's pages/s over the first's: %.3f. CPU per page, last over first: %.3f.\n",
			ws[len(ws)-1].PagesPerSec/ws[0].PagesPerSec, ws[len(ws)-1].CPUPerPage/ws[0].CPUPerPage)
	}
	return b.String()
}

func writeSamples(path string, ss []sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	head := []string{"t", "pages", "fetched", "new", "duplicates", "queued", "spilled", "rss", "peak_rss", "cpu",
		"state_bytes", "warc_bytes", "done_count", "done_max", "checkpoints", "checkpoint_sum"}
	for _, d := range crawl.DoneBuckets() {
		head = append(head, "done_le_"+strconv.FormatFloat(d.Seconds(), 'g', -1, 64))
	}
	_ = w.Write(head)
	for _, s := range ss {
		row := []float64{s.T, s.Pages, s.Fetched, s.New, s.Duplicates, s.Queued, s.Spilled, s.RSS, s.PeakRSS, s.CPU,
			s.StateBytes, s.WARCBytes, s.DoneCount, s.DoneMax, s.Checkpoints, s.CkptSum}
		for i := range crawl.DoneBuckets() {
			v := 0.0
			if i < len(s.DoneBuckets) {
				v = s.DoneBuckets[i]
			}
			row = append(row, v)
		}
		rec := make([]string, len(row))
		for i, v := range row {
			rec[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// dirBytes sums the sizes of the regular files under dir.
func dirBytes(dir string) float64 {
	var n float64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += float64(fi.Size())
			}
		}
		return nil
	})
	return n
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// readCollyProgress reads the "pages N" lines collycrawl prints.
func readCollyProgress(r *bufio.Reader, n *atomicInt) {
	for {
		l, err := r.ReadString('\n')
		if f := strings.Fields(l); len(f) == 2 && f[0] == "pages" {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				n.store(v)
			}
		}
		if err != nil {
			return
		}
	}
}

// stopServer stops the testweb server once it runs.
var stopServer = func() {}

func fail(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "scalebench: %v\n", err)
		stopServer()
		os.Exit(1)
	}
}
