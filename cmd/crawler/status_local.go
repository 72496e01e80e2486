package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/layercrawl/layercrawl/monitor"
)

// maxStatusBytes bounds the status document read from a crawl's server;
// the server's own is bounded far below (top-N tables, last N fetches).
const maxStatusBytes = 8 << 20

// fetchLocalStatus reads /status.json from the status server at addr
// (host:port, or an http:// or https:// URL).
func fetchLocalStatus(ctx context.Context, addr string) (*monitor.Status, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	url := strings.TrimSuffix(base, "/") + "/status.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: --addr %q: %v", errUsage, addr, err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status: %s: %s", url, res.Status)
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("status: %s: content type %q, not a layercrawl status server", url, res.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxStatusBytes+1))
	if err != nil {
		return nil, fmt.Errorf("status: %s: %w", url, err)
	}
	if len(body) > maxStatusBytes {
		return nil, fmt.Errorf("status: %s: response over %d bytes", url, maxStatusBytes)
	}
	var st monitor.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("status: %s: %w", url, err)
	}
	if st.Mode == "" || st.Time.IsZero() {
		return nil, fmt.Errorf("status: %s: %w", url, errors.New("not a layercrawl status document"))
	}
	return &st, nil
}

// localStatus prints the status of a running crawl read from its server.
func localStatus(ctx context.Context, w io.Writer, addr string, asJSON bool) error {
	st, err := fetchLocalStatus(ctx, addr)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, st)
	}
	state := "running"
	if st.Done {
		state = "finished"
	}
	if st.Started.IsZero() {
		fmt.Fprintf(w, "crawl at %s: starting (%s mode)\n", addr, st.Mode)
	} else {
		fmt.Fprintf(w, "crawl at %s: %s (%s mode), started %s, %v ago, GOMAXPROCS %d\n", addr, state, st.Mode,
			st.Started.UTC().Format(time.RFC3339), st.Time.Sub(st.Started).Round(time.Second), st.GOMAXPROCS)
	}
	t := st.Totals
	fmt.Fprintf(w, "pages fetched %d this run (%.1f pages/s), %d in all runs; errors %d fetch, %d HTTP 4xx/5xx\n",
		t.Fetched, t.PagesPerSecond, t.Pages, t.FetchErrors, t.HTTPErrors)
	q := st.Queue
	fmt.Fprintf(w, "queued %d on %d hosts (%d in memory, %d spilled to disk), %d in flight, %d waiting for a retry\n",
		q.Queued, q.Hosts, q.InMemory, q.Spilled, q.InFlight, q.Retrying)
	if t.Retried > 0 || q.Slowed > 0 {
		fmt.Fprintf(w, "retries queued %d, exhausted %d; hosts slowed down by 429/503 now %d\n", t.Retried, t.RetriesExhausted, q.Slowed)
	}
	fmt.Fprintf(w, "discovered new %d, duplicates %d\n", t.New, t.Duplicates)
	f := st.Filter
	if f.Generations > 0 {
		fmt.Fprintf(w, "duplicate filter: %d generations sized for %d URLs, the newest %.2f%% full, estimated false-positive rate %.3g (target %g)\n",
			f.Generations, f.Capacity, 100*f.Fill, f.FalsePositiveRate, f.Target)
	} else {
		fmt.Fprintf(w, "duplicate filter: %.2f%% full, estimated false-positive rate %.3g (target %g at %d URLs)\n",
			100*f.Fill, f.FalsePositiveRate, f.Target, f.ExpectedURLs)
	}
	if len(st.Errors) > 0 {
		fmt.Fprintf(w, "errors by kind: %s\n", countList(st.Errors))
	}
	if len(st.BusiestHosts) > 0 {
		var b strings.Builder
		for i, h := range st.BusiestHosts {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d", h.Host, h.Fetches)
		}
		fmt.Fprintf(w, "busiest hosts: %s\n", b.String())
	}
	return nil
}

func countList(cs []monitor.Count) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", c.Name, c.N)
	}
	return b.String()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
