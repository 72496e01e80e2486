package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/monitor"
)

// monitorFlags are the flags of the status server and of the logs.
type monitorFlags struct {
	httpAddr    string
	allowRemote bool
	pprof       bool
	linger      time.Duration
	logFormat   string
}

func (m *monitorFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&m.httpAddr, "http-addr", "", "serve Prometheus metrics (/metrics), a live status page (/) and its JSON (/status.json) on this host:port, e.g. 127.0.0.1:8080 (default: off)")
	fs.BoolVar(&m.allowRemote, "http-allow-remote", false, "let --http-addr bind an address that is not loopback: the page shows the crawl's URLs and hosts to anyone who can reach it")
	fs.BoolVar(&m.pprof, "pprof", false, "with --http-addr: also serve the Go profiler at /debug/pprof/")
	durationVar(fs, &m.linger, "http-linger", 5*time.Second, "with --http-addr: keep serving the final counts this long after the crawl ends, so that a last scrape sees them (not after SIGINT/SIGTERM; -1: stop at once)")
	fs.StringVar(&m.logFormat, "log-format", "text", "format of the operational messages on stderr: text, or json (one object per line)")
}

// startMonitor opens the status server's listener, before the crawl
// starts, so that a bad or refused address fails at once. It returns nil
// without --http-addr.
func (m *monitorFlags) startMonitor(log *slog.Logger) (*monitor.Monitor, net.Listener, error) {
	if m.httpAddr == "" {
		if m.pprof || m.allowRemote {
			log.Warn("--pprof and --http-allow-remote have no effect without --http-addr")
		}
		return nil, nil, nil
	}
	ln, remote, err := monitor.Listen(m.httpAddr, m.allowRemote)
	if err != nil {
		return nil, nil, err
	}
	if remote {
		log.Warn("status server accepts remote clients: it has no authentication; anyone who reaches it sees the crawl's URLs and hosts", "addr", ln.Addr().String(), "pprof", m.pprof)
	}
	mon, err := monitor.New(monitor.Options{Pprof: m.pprof, Logger: log})
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	log.Info("status server", "url", "http://"+ln.Addr().String()+"/", "metrics", "http://"+ln.Addr().String()+"/metrics")
	return mon, ln, nil
}

// serveMonitor runs mon beside the crawl until ctx ends or the returned
// stop is called. stop takes a last sample of the finished crawl, keeps
// serving it for linger (unless ctx ends first: a crawl stopped by a
// signal does not wait), then shuts the server down and waits for it.
func serveMonitor(ctx context.Context, mon *monitor.Monitor, ln net.Listener, cr *crawl.Crawler, linger time.Duration, log *slog.Logger) (stop func()) {
	if mon == nil {
		return func() {}
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mon.Run(mctx, ln, cr); err != nil {
			log.Error("status server stopped", "err", err)
		}
	}()
	return func() {
		defer func() { cancel(); <-done }()
		mon.Finish(cr)
		if linger <= 0 || ctx.Err() != nil {
			return
		}
		log.Info("status server stays up with the final counts", "for", linger)
		t := time.NewTimer(linger)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-done:
		}
	}
}

// record logs the progress as a structured record (--log-format json).
func (p *progress) record() {
	now := time.Now()
	s := p.cr.Stats()
	n := s.Fetch.Fetched
	rate := float64(n-p.lastN) / now.Sub(p.last).Seconds()
	p.last, p.lastN = now, n
	p.log.Info("progress", "fetched", n, "pages_per_second", rate, "pages", s.Pages, "queued", s.Queued, "hosts", s.Hosts,
		"in_flight", s.InFlight, "errors", s.Fetch.FetchErrors+s.Fetch.HTTPErrors,
		"filter_fill", s.Filter.Fill, "filter_fp_estimated", s.Filter.FalsePositiveRate, "filter_fp_target", s.Filter.Target)
	if s.Filter.ExpectedURLs > 0 && s.Filter.FalsePositiveRate > s.Filter.Target {
		p.log.Warn("estimated false-positive rate above the target; rerun with a larger --expected-urls",
			"estimated", s.Filter.FalsePositiveRate, "target", s.Filter.Target)
	}
}

// logSummary logs the end of the crawl as one record, beside the report
// printed on stdout.
func logSummary(log *slog.Logger, cr *crawl.Crawler, interrupted bool) {
	s := cr.Stats()
	f := s.Fetch
	log.Info("crawl finished", "interrupted", interrupted, "fetched", f.Fetched, "pages", s.Pages, "errors", s.Errors,
		"fetch_errors", f.FetchErrors, "http_errors", f.HTTPErrors, "queued", s.Queued, "new", s.New, "duplicates", s.Duplicates,
		"elapsed", time.Since(s.Started).Round(time.Millisecond))
}
