package monitor

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/layercrawl/layercrawl/crawl"
)

// ErrRemoteAddr is returned by Listen for an address that is not loopback
// when allowRemote is not set.
var ErrRemoteAddr = errors.New("monitor: address is not loopback")

// Listen opens the monitor's TCP listener on addr (host:port). Unless
// allowRemote is set, the host must be a loopback address or "localhost":
// the status page shows the crawl's URLs and hosts, and pprof its
// memory. remote reports whether the listener accepts non-loopback
// clients, for the caller's warning.
func Listen(addr string, allowRemote bool) (ln net.Listener, remote bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, fmt.Errorf("monitor: listen address %q: %w", addr, err)
	}
	remote = !isLoopback(host)
	if remote && !allowRemote {
		return nil, true, fmt.Errorf("%w: %q (use 127.0.0.1:PORT, or allow remote clients explicitly)", ErrRemoteAddr, addr)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		return nil, remote, fmt.Errorf("monitor: %w", err)
	}
	return ln, remote, nil
}

// isLoopback reports whether a listen host binds loopback only. The empty
// host binds every interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Source is what the Monitor reads of the crawl; *crawl.Crawler is one.
type Source interface {
	Stats() crawl.Stats
	Options() crawl.Options
}

// rendered is one status document, ready to serve.
type rendered struct {
	status *Status
	json   []byte
	html   []byte
}

// Run samples src every Options.Interval and serves ln until ctx ends or
// done is closed and a last sample is taken; it then shuts the server down
// (waiting at most a second for responses under way) and returns. Pass a
// nil done to stop on ctx only.
func (m *Monitor) Run(ctx context.Context, ln net.Listener, src Source) error {
	o := src.Options()
	m.sample(src, &o, nil, false)
	srv := &http.Server{
		Handler:           trackHandling(m.Handler()),
		ConnContext:       connContext,
		ReadHeaderTimeout: m.opts.ReadHeaderTimeout,
		ReadTimeout:       m.opts.ReadTimeout,
		WriteTimeout:      m.opts.WriteTimeout,
		IdleTimeout:       m.opts.ReadTimeout,
		MaxHeaderBytes:    8 << 10,
	}
	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Go(func() {
		err := srv.Serve(newConnLimiter(ln, m.opts.MaxConns, m.opts.MaxConnsPerClient))
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		serveErr <- err
	})
	var rate []RatePoint
	last, lastN := m.opts.Now(), src.Stats().Fetch.Fetched
	t := time.NewTicker(m.opts.Interval)
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-serveErr:
			serveErr <- err
			break loop
		case <-t.C:
			now := m.opts.Now()
			s := src.Stats()
			n := s.Fetch.Fetched
			if dt := now.Sub(last).Seconds(); dt > 0 {
				rate = append(rate, RatePoint{Time: now, PagesPerSecond: float64(n-lastN) / dt})
				if len(rate) > m.opts.History {
					rate = slices.Delete(rate, 0, len(rate)-m.opts.History)
				}
			}
			last, lastN = now, n
			m.sampleStats(s, &o, slices.Clone(rate), false)
		}
	}
	t.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	wg.Wait()
	if err == nil {
		err = <-serveErr
	}
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	return nil
}

// Finish takes a last sample of src, marked done, so that a page still
// open shows the final counters.
func (m *Monitor) Finish(src Source) {
	o := src.Options()
	m.sample(src, &o, m.lastRate(), true)
}

func (m *Monitor) lastRate() []RatePoint {
	if d := m.doc.Load(); d != nil {
		return d.status.Rate
	}
	return nil
}

func (m *Monitor) sample(src Source, o *crawl.Options, rate []RatePoint, done bool) {
	m.sampleStats(src.Stats(), o, rate, done)
}

// sampleStats stores s for /metrics and renders the status document.
func (m *Monitor) sampleStats(s crawl.Stats, o *crawl.Options, rate []RatePoint, done bool) {
	m.stats.Store(&s)
	st := m.buildStatus(s, o, rate, done)
	js, err := json.Marshal(st)
	if err != nil {
		// Status holds only numbers, strings and times: Marshal cannot
		// fail on it.
		panic(err)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, pageData{S: st, Chart: chartPoints(st.Rate), Peak: peakRate(st.Rate), Script: template.JS(pageScript), Style: template.CSS(pageStyle), Refresh: int(max(m.opts.Interval, 5*time.Second) / time.Second)}); err != nil {
		m.opts.Logger.Error("monitor: status page", "err", err)
	}
	m.doc.Store(&rendered{status: st, json: js, html: b.Bytes()})
}

// Status returns the last status document; nil before Run.
func (m *Monitor) Status() *Status {
	if d := m.doc.Load(); d != nil {
		return d.status
	}
	return nil
}

// Handler returns the monitor's HTTP handler: /, /status.json, /metrics,
// and /debug/pprof/ with Options.Pprof.
func (m *Monitor) Handler() http.Handler {
	mux := http.NewServeMux()
	// The page and the JSON are served ready-made from the last sample.
	serve := func(contentType string, body func(*rendered) []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			d := m.doc.Load()
			if d == nil {
				http.Error(w, "not started", http.StatusServiceUnavailable)
				return
			}
			h := w.Header()
			h.Set("Content-Type", contentType)
			h.Set("Content-Security-Policy", pageCSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("Cache-Control", "no-store")
			w.Write(body(d))
		}
	}
	mux.HandleFunc("GET /{$}", serve("text/html; charset=utf-8", func(d *rendered) []byte { return d.html }))
	mux.HandleFunc("GET /status.json", serve("application/json", func(d *rendered) []byte { return d.json }))
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// No cap on scrapes in flight (a cap answers 503 past it): a
		// scrape reads the sampled Stats and the counters, costs
		// microseconds, and the connection caps bound how many run.
		Timeout: 5 * time.Second,
	}))
	if m.opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		// pprof.Cmdline would show the command line as given, Redis
		// password and seeds' userinfo included.
		mux.HandleFunc("/debug/pprof/cmdline", cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func sortCounts(c []Count) {
	slices.SortFunc(c, func(a, b Count) int { return cmp.Compare(a.Name, b.Name) })
}

//go:embed page.js
var pageScript string

//go:embed page.css
var pageStyle string

//go:embed page.html
var pageHTML string

// pageCSP allows the page only its own inline script and style (by hash)
// and requests to its own origin: no external asset can load.
var pageCSP = "default-src 'none'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"script-src '" + cspHash(pageScript) + "'; style-src '" + cspHash(pageStyle) + "'"

func cspHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}

type pageData struct {
	S       *Status
	Chart   string  // points of the rate chart's polyline
	Peak    float64 // highest rate of the chart
	Script  template.JS
	Style   template.CSS
	Refresh int
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct":  func(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) },
	"sci":  func(f float64) string { return fmt.Sprintf("%.3g", f) },
	"f1":   func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"time": func(t time.Time) string { return t.UTC().Format("15:04:05") },
}).Parse(pageHTML))

// chartPoints draws the rate samples in the chart's 600x120 box, as the
// page's script does, for browsers without JavaScript.
func chartPoints(rate []RatePoint) string {
	top := peakRate(rate)
	if top == 0 {
		top = 1
	}
	var b strings.Builder
	for i, p := range rate {
		x := 0.0
		if len(rate) > 1 {
			x = 600 * float64(i) / float64(len(rate)-1)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, 118-116*p.PagesPerSecond/top)
	}
	return b.String()
}

func peakRate(rate []RatePoint) float64 {
	peak := 0.0
	for _, p := range rate {
		peak = max(peak, p.PagesPerSecond)
	}
	return peak
}

// cmdline serves the process's command line as pprof.Cmdline does (the
// arguments separated by NUL bytes), with the userinfo of every URL
// removed: the status page, the JSON and the profiler show no credentials.
func cmdline(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, strings.Join(redactArgs(os.Args), "\x00"))
}
