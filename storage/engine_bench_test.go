package storage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The engine comparison replays the frontier's workload (see frontier's key
// layout: q/<host>\x00<seq>, h/<host>, j/<seq>) on pebble and on bbolt, each
// in its own child process so that peak RSS is the engine's own:
//
//	go test -run '^$' -bench BenchmarkEngineWorkload -benchtime 1x ./storage/
//
// STORAGE_ENGINE_URLS sets the number of queued URLs (default 2,000,000).
// The URLs come from ../shared/datasets (1.5 million distinct URLs), read in
// file-name order and cycled from the start when exhausted, so with the
// default the first ~0.5 million appear twice (as distinct queue entries).

const (
	workloadBatch  = 256 // entries per durable batch (a group commit)
	workloadWindow = 16  // entries read from a host's head per visit
)

type workloadResult struct {
	Engine         string  `json:"engine"`
	URLs           int     `json:"urls"`
	Hosts          int     `json:"hosts"`
	WriteSeconds   float64 `json:"write_s"`
	PopSeconds     float64 `json:"pop_s"`
	ReopenSeconds  float64 `json:"reopen_s"`
	DiskAfterWrite int64   `json:"disk_after_write"`
	DiskAfterPop   int64   `json:"disk_after_pop"`
	PeakRSS        int64   `json:"peak_rss"`
	PeakGoHeap     int64   `json:"peak_go_heap"` // HeapInuse, sampled every 64 batches
	PeakGoSys      int64   `json:"peak_go_sys"`  // memory the Go runtime holds from the OS, sampled likewise
	RSSBeforeOpen  int64   `json:"rss_before_open"`
}

func BenchmarkEngineWorkload(b *testing.B) {
	datasets := sharedDatasets(b)
	n := 2_000_000
	if s := os.Getenv("STORAGE_ENGINE_URLS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("STORAGE_ENGINE_URLS=%q", s)
		}
		n = v
	}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				cmd := exec.Command(os.Args[0], "-test.run=^TestEngineWorkloadChild$", "-test.v")
				cmd.Env = append(os.Environ(),
					"STORAGE_ENGINE_CHILD="+e.name,
					"STORAGE_ENGINE_DIR="+filepath.Join(dir, "state"),
					"STORAGE_ENGINE_DATASETS="+datasets,
					"STORAGE_ENGINE_URLS="+strconv.Itoa(n))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
				var r workloadResult
				for _, line := range strings.Split(string(out), "\n") {
					if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
						if err := json.Unmarshal([]byte(rest), &r); err != nil {
							b.Fatal(err)
						}
					}
				}
				if r.URLs != n {
					b.Fatalf("child reported %d URLs, want %d:\n%s", r.URLs, n, out)
				}
				b.ReportMetric(float64(r.URLs)/r.WriteSeconds, "write-URLs/s")
				b.ReportMetric(float64(r.URLs)/r.PopSeconds, "pop-URLs/s")
				b.ReportMetric(r.ReopenSeconds*1000, "reopen-ms")
				b.ReportMetric(float64(r.DiskAfterWrite)/(1<<20), "disk-MiB")
				b.ReportMetric(float64(r.DiskAfterPop)/(1<<20), "disk-after-pop-MiB")
				b.ReportMetric(float64(r.PeakRSS)/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(float64(r.RSSBeforeOpen)/(1<<20), "RSS-before-open-MiB")
				b.ReportMetric(float64(r.PeakGoHeap)/(1<<20), "peak-Go-heap-MiB")
				b.ReportMetric(float64(r.PeakGoSys)/(1<<20), "peak-Go-sys-MiB")
				b.Logf("%+v", r)
			}
		})
	}
}

// sharedDatasets returns the shared datasets directory, skipping (or failing
// under CI=true) when it is absent.
func sharedDatasets(tb testing.TB) string {
	dir, err := filepath.Abs(filepath.Join("..", "..", "shared", "datasets"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("shared datasets missing at %s: %v", dir, err)
		}
		tb.Skipf("shared datasets missing at %s (clone ../shared beside the repo): %v", dir, err)
	}
	return dir
}

// TestEngineWorkloadChild is the child side of BenchmarkEngineWorkload.
func TestEngineWorkloadChild(t *testing.T) {
	name := os.Getenv("STORAGE_ENGINE_CHILD")
	if name == "" {
		t.Skip("child process of BenchmarkEngineWorkload")
	}
	var open func(string, Options, bool) (engine, error)
	for _, e := range engines {
		if e.name == name {
			open = e.open
		}
	}
	n, _ := strconv.Atoi(os.Getenv("STORAGE_ENGINE_URLS"))
	dir := os.Getenv("STORAGE_ENGINE_DIR")
	r, err := runWorkload(open, dir, os.Getenv("STORAGE_ENGINE_DATASETS"), n)
	if err != nil {
		t.Fatal(err)
	}
	r.Engine = name
	out, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", out)
}

type hostQueue struct{ head, tail uint64 }

// sampleGoMemory raises r's Go-memory peaks to the current figures.
func sampleGoMemory(r *workloadResult) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.PeakGoHeap = max(r.PeakGoHeap, int64(ms.HeapInuse))
	r.PeakGoSys = max(r.PeakGoSys, int64(ms.Sys))
}

func runWorkload(open func(string, Options, bool) (engine, error), dir, datasets string, n int) (workloadResult, error) {
	var r workloadResult
	r.RSSBeforeOpen = procStatusBytes("VmRSS")
	s, err := Open(dir, Options{engine: open})
	if err != nil {
		return r, err
	}
	urls, err := datasetURLs(datasets, n)
	if err != nil {
		return r, err
	}
	hosts := map[string]*hostQueue{}
	var journal uint64
	batches := 0
	type item struct{ url, via string }
	batch := make([]item, 0, workloadBatch)
	flush := func() error {
		err := s.Write(func(w Writer) error {
			touched := map[string]*hostQueue{}
			for _, it := range batch {
				h := urlHost(it.url)
				q := hosts[h]
				if q == nil {
					q = &hostQueue{}
					hosts[h] = q
				}
				touched[h] = q
				if err := w.Set(queueKeyOf(h, q.tail), append(append([]byte{1}, it.url...), it.via...)); err != nil {
					return err
				}
				q.tail++
				journal++
				if err := w.Set(binary.BigEndian.AppendUint64([]byte("j/"), journal), []byte(it.url)); err != nil {
					return err
				}
			}
			for h, q := range touched {
				if err := w.Set([]byte("h/"+h), binary.AppendUvarint(nil, q.tail-q.head)); err != nil {
					return err
				}
			}
			return nil
		})
		batch = batch[:0]
		if batches++; batches%64 == 0 {
			sampleGoMemory(&r)
		}
		return err
	}
	start := time.Now()
	via := ""
	for u := range urls {
		if u.err != nil {
			return r, u.err
		}
		batch = append(batch, item{u.url, via})
		via = u.url
		r.URLs++
		if len(batch) == workloadBatch {
			if err := flush(); err != nil {
				return r, err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return r, err
		}
	}
	r.WriteSeconds = time.Since(start).Seconds()
	r.Hosts = len(hosts)
	if err := s.Close(); err != nil {
		return r, err
	}
	if r.DiskAfterWrite, err = dirSize(dir); err != nil {
		return r, err
	}
	start = time.Now()
	if s, err = Open(dir, Options{engine: open}); err != nil {
		return r, err
	}
	r.ReopenSeconds = time.Since(start).Seconds()

	// Pop: visit hosts round-robin, read up to a window from each head,
	// delete what was read (plus as many journal records, as a checkpoint
	// would trim them) in durable batches.
	start = time.Now()
	order := make([]string, 0, len(hosts))
	for h := range hosts {
		order = append(order, h)
	}
	sort.Strings(order)
	var dels [][]byte
	counts := map[string]uint64{}
	var journalHead uint64
	popped := 0
	commit := func() error {
		err := s.Write(func(w Writer) error {
			for _, k := range dels {
				if err := w.Delete(k); err != nil {
					return err
				}
				journalHead++
				if err := w.Delete(binary.BigEndian.AppendUint64([]byte("j/"), journalHead)); err != nil {
					return err
				}
			}
			for h, left := range counts {
				k := []byte("h/" + h)
				if left == 0 {
					if err := w.Delete(k); err != nil {
						return err
					}
				} else if err := w.Set(k, binary.AppendUvarint(nil, left)); err != nil {
					return err
				}
			}
			return nil
		})
		dels = dels[:0]
		clear(counts)
		if batches++; batches%64 == 0 {
			sampleGoMemory(&r)
		}
		return err
	}
	for len(order) > 0 {
		next := order[:0]
		for _, h := range order {
			q := hosts[h]
			lo, hi := queueKeyOf(h, q.head), queueKeyOf(h, 0)
			hi[len(hi)-9] = 1
			got := 0
			var ascendErr error
			if err := s.Ascend(lo, hi, func(k, v []byte) bool {
				if seq := binary.BigEndian.Uint64(k[len(k)-8:]); seq != q.head {
					ascendErr = fmt.Errorf("host %s: got seq %d, want %d", h, seq, q.head)
					return false
				}
				if len(v) < 2 || v[0] != 1 {
					ascendErr = fmt.Errorf("host %s: bad value %q", h, v)
					return false
				}
				dels = append(dels, bytes.Clone(k))
				q.head++
				got++
				return got < workloadWindow
			}); err != nil {
				return r, err
			}
			if ascendErr != nil {
				return r, ascendErr
			}
			popped += got
			counts[h] = q.tail - q.head
			if len(dels) >= workloadBatch {
				if err := commit(); err != nil {
					return r, err
				}
			}
			if q.head < q.tail {
				next = append(next, h)
			}
		}
		order = next
	}
	if err := commit(); err != nil {
		return r, err
	}
	r.PopSeconds = time.Since(start).Seconds()
	if popped != r.URLs {
		return r, fmt.Errorf("popped %d of %d", popped, r.URLs)
	}
	left := 0
	if err := s.Ascend(nil, nil, func(k, _ []byte) bool { left++; return true }); err != nil {
		return r, err
	}
	if left != 0 {
		return r, fmt.Errorf("%d keys left after popping everything", left)
	}
	if err := s.Close(); err != nil {
		return r, err
	}
	r.PeakRSS = procStatusBytes("VmHWM")
	r.DiskAfterPop, err = dirSize(dir)
	return r, err
}

func queueKeyOf(host string, seq uint64) []byte {
	k := make([]byte, 0, 2+len(host)+1+8)
	k = append(k, "q/"...)
	k = append(k, host...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func urlHost(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexAny(u, "/?#"); i >= 0 {
		u = u[:i]
	}
	return u
}

type datasetURL struct {
	url string
	err error
}

// datasetURLs yields n URLs from the shared datasets, cycling through them
// when n exceeds their total.
func datasetURLs(dir string, n int) (func(yield func(datasetURL) bool), error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt.gz"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no datasets in %s: %v", dir, err)
	}
	sort.Strings(files)
	return func(yield func(datasetURL) bool) {
		count := 0
		for {
			for _, p := range files {
				f, err := os.Open(p)
				if err != nil {
					yield(datasetURL{err: err})
					return
				}
				zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
				if err != nil {
					f.Close()
					yield(datasetURL{err: err})
					return
				}
				sc := bufio.NewScanner(zr)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					if count == n {
						f.Close()
						return
					}
					count++
					if !yield(datasetURL{url: sc.Text()}) {
						f.Close()
						return
					}
				}
				f.Close()
				if err := sc.Err(); err != nil {
					yield(datasetURL{err: err})
					return
				}
			}
		}
	}, nil
}

func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			total += fi.Size()
		}
		return nil
	})
	return total, err
}

// procStatusBytes returns a "kB" field of /proc/self/status in bytes, or -1.
func procStatusBytes(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return v << 10
		}
	}
	return -1
}
