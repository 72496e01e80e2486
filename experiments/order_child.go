package experiments

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/layercrawl/layercrawl/internal/linkweb"
)

// crawlOrderChild runs one crawl of web with variant v as a child process
// of cfg.Crawler and reads the pages it fetched from its crawl log.
func crawlOrderChild(ctx context.Context, web *linkweb.Web, cfg OrderConfig, v OrderVariant, budget int, parent string) (OrderRun, error) {
	dir, err := os.MkdirTemp(parent, v.Name+"-")
	if err != nil {
		return OrderRun{}, fmt.Errorf("experiments: %w", err)
	}
	defer os.RemoveAll(dir)
	seeds := filepath.Join(dir, "seeds.txt")
	var sb bytes.Buffer
	for _, r := range web.Roots() {
		sb.WriteString(r + "\n")
	}
	if err := os.WriteFile(seeds, sb.Bytes(), 0o644); err != nil {
		return OrderRun{}, fmt.Errorf("experiments: %w", err)
	}
	out := filepath.Join(dir, "out")
	args := []string{"crawl", "--max-pages", strconv.Itoa(budget), "--delay", "-1", "--concurrency", strconv.Itoa(cfg.Concurrency),
		"--allow-private", "--order", v.Order, "--progress-interval", "-1", "--seeds", seeds, "--out", out}
	if v.ExpectedURLs > 0 {
		args = append(args, "--expected-urls", strconv.FormatUint(v.ExpectedURLs, 10))
	}
	cmd := exec.CommandContext(ctx, cfg.Crawler, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	err = cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return OrderRun{}, fmt.Errorf("experiments: order %s: %s %v: %w\n%s", v.Name, cfg.Crawler, args, err, lastBytes(stderr.Bytes(), 2000))
	}
	run := OrderRun{Variant: v.Name, Wall: wall, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	f, err := os.Open(filepath.Join(out, "crawl.log.jsonl"))
	if err != nil {
		return OrderRun{}, fmt.Errorf("experiments: order %s: %w", v.Name, err)
	}
	defer f.Close()
	obs := &fetchOrder{web: web}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var rec struct {
			URL       string    `json:"url"`
			Status    int       `json:"status"`
			FetchedAt time.Time `json:"fetched_at"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return OrderRun{}, fmt.Errorf("experiments: order %s: crawl log: %w", v.Name, err)
		}
		if rec.URL == "" {
			continue // not a fetch record
		}
		p, ok := web.PageOf(rec.URL)
		obs.requests++
		switch {
		case ok && rec.Status == 200:
			obs.pages = append(obs.pages, startedPage{rec.FetchedAt, int32(p)})
		case ok:
			obs.failed++
		}
	}
	if err := sc.Err(); err != nil {
		return OrderRun{}, fmt.Errorf("experiments: order %s: crawl log: %w", v.Name, err)
	}
	run.Fetched, run.Requests, run.Failed = obs.order(), obs.requests, obs.failed
	return run, nil
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
