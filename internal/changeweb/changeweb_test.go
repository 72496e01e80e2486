package changeweb

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func startSim(t *testing.T, o Options) (*Web, *SimClock) {
	t.Helper()
	clock := NewSimClock(t0)
	o.Clock = clock
	w, err := Start(o, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w, clock
}

// TestRates: the share of pages that never change, the bounds and the
// log-uniform spread of the others' mean intervals; the same seed gives
// the same web.
func TestRates(t *testing.T) {
	const seed = 3
	w, err := New(Options{Seed: seed, Pages: 10000, Clock: NewSimClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	never, fastMinute, slowHour := 0, 0, 0
	for p := range w.Pages() {
		r := w.Rate(p)
		switch {
		case r == 0:
			never++
			continue
		case r > 1/DefaultFastest.Seconds()*(1+1e-9) || r < 1/DefaultSlowest.Seconds()*(1-1e-9):
			t.Fatalf("page %d: rate %g outside the bounds", p, r)
		case r > 1.0/60:
			fastMinute++
		case r < 1.0/3600:
			slowHour++
		}
	}
	changing := float64(w.Pages() - never)
	// log-uniform over [5s, 1d]: P(mean < 1m) = ln 12 / ln 17280, P(mean > 1h) = ln 24 / ln 17280.
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"never", float64(never) / float64(w.Pages()), 0.2},
		{"faster than a minute", float64(fastMinute) / changing, math.Log(12) / math.Log(17280)},
		{"slower than an hour", float64(slowHour) / changing, math.Log(24) / math.Log(17280)},
	} {
		if math.Abs(c.got-c.want) > 0.02 {
			t.Errorf("share %s %.4f, want %.4f (seed %d)", c.name, c.got, c.want, seed)
		}
	}
	w2, _ := New(Options{Seed: seed, Pages: 10000, Clock: NewSimClock(t0)})
	for p := 0; p < 100; p++ {
		if w.Rate(p) != w2.Rate(p) || w.Version(p, t0.Add(time.Hour)) != w2.Version(p, t0.Add(time.Hour)) {
			t.Fatalf("page %d differs between two webs of one seed", p)
		}
	}
}

// TestPoisson: the number of changes in two hours, summed over the pages,
// is within 4 standard deviations of Σ λT; and inter-change gaps have the
// exponential's coefficient of variation 1.
func TestPoisson(t *testing.T) {
	const seed = 4
	w, _ := New(Options{Seed: seed, Pages: 200, Fastest: time.Second, Slowest: time.Minute, Never: -1, Clock: NewSimClock(t0)})
	T := 2 * time.Hour
	var got, want float64
	var gaps []float64
	for p := range w.Pages() {
		ch := w.Changes(p, t0, t0.Add(T))
		got += float64(len(ch))
		want += w.Rate(p) * T.Seconds()
		if v := w.Version(p, t0.Add(T)); v != len(ch) {
			t.Fatalf("page %d: version %d, %d changes", p, v, len(ch))
		}
		if p == 0 {
			for i := 1; i < len(ch); i++ {
				gaps = append(gaps, ch[i].Sub(ch[i-1]).Seconds()*w.Rate(p))
			}
		}
	}
	if math.Abs(got-want) > 4*math.Sqrt(want) {
		t.Errorf("%g changes, want %g ± %g (seed %d)", got, want, 4*math.Sqrt(want), seed)
	}
	var m, m2 float64
	for _, g := range gaps {
		m += g
		m2 += g * g
	}
	m /= float64(len(gaps))
	cv := math.Sqrt(m2/float64(len(gaps))-m*m) / m
	if math.Abs(m-1) > 0.1 || math.Abs(cv-1) > 0.1 {
		t.Errorf("page 0: %d gaps of mean %.3f/λ and CV %.3f, want 1 and 1 (seed %d)", len(gaps), m, cv, seed)
	}
}

func get(t *testing.T, c *http.Client, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestConditional: a page serves its version with an ETag and a
// Last-Modified; conditional requests get 304 until the page changes.
func TestConditional(t *testing.T) {
	w, clock := startSim(t, Options{Seed: 5, Pages: 50, Hosts: 2, Fastest: time.Minute, Slowest: time.Minute, Never: -1})
	c := &http.Client{}
	const p = 7
	u := w.URL(p)
	resp, body := get(t, c, u)
	etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if resp.StatusCode != 200 || etag != ETag(p, 0) || !strings.Contains(body, "version 0") {
		t.Fatalf("first GET: %d, ETag %s, body %q", resp.StatusCode, etag, body)
	}
	if resp, _ := get(t, c, u, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match current: %d, want 304", resp.StatusCode)
	}
	if resp, _ := get(t, c, u, "If-Modified-Since", lm); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-Modified-Since current: %d, want 304", resp.StatusCode)
	}
	next := w.Changes(p, t0, t0.Add(24*time.Hour))[0]
	clock.Set(next)
	resp, body = get(t, c, u, "If-None-Match", etag)
	if resp.StatusCode != 200 || resp.Header.Get("ETag") != ETag(p, 1) || !strings.Contains(body, "version 1") {
		t.Errorf("after the change: %d, ETag %s, want 200 with version 1", resp.StatusCode, resp.Header.Get("ETag"))
	}
	if got := resp.Header.Get("Last-Modified"); got != next.UTC().Format(http.TimeFormat) {
		t.Errorf("Last-Modified %s, want %s", got, next.UTC().Format(http.TimeFormat))
	}
	// If-None-Match decides alone, even with a current If-Modified-Since.
	if resp, _ := get(t, c, u, "If-None-Match", etag, "If-Modified-Since", clock.Now().UTC().Format(http.TimeFormat)); resp.StatusCode != 200 {
		t.Errorf("stale If-None-Match with a current If-Modified-Since: %d, want 200", resp.StatusCode)
	}
	if ok, not := w.Served(p); ok != 3 || not != 2 {
		t.Errorf("served %d 200s and %d 304s, want 3 and 2", ok, not)
	}
	for _, path := range []string{"/robots.txt", "/p0", "/p07", "/p50", "/p-1", "/?a=1"} {
		if resp, _ := get(t, c, "http://"+w.authority(0)+path); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestReachable: following links from one root reaches every page, and
// PageOf inverts URL.
func TestReachable(t *testing.T) {
	w, _ := startSim(t, Options{Seed: 6, Pages: 203, Hosts: 3})
	c := &http.Client{}
	href := regexp.MustCompile(`href="([^"]+)"`)
	seen := map[int]bool{}
	queue := []string{w.Roots()[1]}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		p, ok := w.PageOf(u)
		if !ok {
			t.Fatalf("PageOf(%s) failed", u)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		if w.URL(p) != u {
			t.Fatalf("URL(PageOf(%s)) = %s", u, w.URL(p))
		}
		_, body := get(t, c, u)
		for _, m := range href.FindAllStringSubmatch(body, -1) {
			l := m[1]
			if strings.HasPrefix(l, "/") {
				l = u[:strings.Index(u[7:], "/")+7] + l
			}
			queue = append(queue, l)
		}
	}
	if len(seen) != w.Pages() {
		t.Errorf("reached %d pages of %d", len(seen), w.Pages())
	}
	for _, u := range []string{"https://" + w.authority(0) + "/", "http://127.36.1.200:" + w.Roots()[0][len("http://127.36.1.1:"):], "http://127.0.0.1/"} {
		if p, ok := w.PageOf(u); ok {
			t.Errorf("PageOf(%s) = %d, want none", u, p)
		}
	}
}

// TestScore checks Score against a reference that samples freshness and
// age every 250 ms.
func TestScore(t *testing.T) {
	const seed = 8
	w, _ := New(Options{Seed: seed, Pages: 20, Fastest: 10 * time.Second, Slowest: 5 * time.Minute, Clock: NewSimClock(t0)})
	rng := rand.New(rand.NewPCG(seed, 1))
	from, to := t0.Add(time.Minute), t0.Add(20*time.Minute)
	for p := range w.Pages() {
		var caps []time.Time
		for range 1 + rng.IntN(15) {
			caps = append(caps, t0.Add(time.Duration(rng.Int64N(int64(25*time.Minute)))))
		}
		got := w.Score(p, caps, from, to)
		const step = 250 * time.Millisecond
		var fresh time.Duration
		var age float64
		for at := from.Add(step / 2); at.Before(to); at = at.Add(step) {
			last := time.Time{}
			for _, c := range caps {
				if !c.After(at) && c.After(last) {
					last = c
				}
			}
			if last.IsZero() {
				age += at.Sub(t0).Seconds() * step.Seconds()
				continue
			}
			ok, a := w.FreshAt(p, last, at)
			if ok {
				fresh += step
			}
			age += a.Seconds() * step.Seconds()
		}
		if d := (got.Fresh - fresh).Abs(); d > time.Duration(len(caps)+1)*2*step {
			t.Errorf("page %d: fresh %v, reference %v (seed %d)", p, got.Fresh, fresh, seed)
		}
		if math.Abs(got.AgeSeconds-age) > 0.01*age+60 {
			t.Errorf("page %d: age integral %g, reference %g (seed %d)", p, got.AgeSeconds, age, seed)
		}
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{
		{Pages: -1},
		{Pages: 5, Hosts: 6},
		{Never: 1.5},
		{Fastest: time.Hour, Slowest: time.Minute},
	} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New(%+v): %v, want ErrInvalidOptions", o, err)
		}
	}
	c := NewSimClock(t0)
	c.Advance(time.Second)
	c.Set(t0) // backwards: ignored
	c.Advance(-time.Hour)
	if got := c.Now(); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("clock reads %v, want %v", got, t0.Add(time.Second))
	}
}

// TestHistory: version 0 is dated before Start, as Options.History says
// (a never-changing page uniformly within it, a changing page by an
// exponential gap of its rate), the Date header follows the web's clock,
// and History changes no change time.
func TestHistory(t *testing.T) {
	const pages = 2000
	w, clock := startSim(t, Options{Seed: 9, Pages: pages, Hosts: 4})
	flat, _ := startSim(t, Options{Seed: 9, Pages: pages, Hosts: 4, History: -1})
	c := &http.Client{}
	var never, fast []float64 // ages of version 0 in History, and in mean change intervals
	for p := range pages {
		lm := w.lastChange(p, t0)
		if lm.After(t0) || t0.Sub(lm) > DefaultHistory {
			t.Fatalf("page %d: version 0 dated %v, want within a year before %v", p, lm, t0)
		}
		if got := flat.lastChange(p, t0); !got.Equal(t0) {
			t.Fatalf("page %d with History -1: version 0 dated %v, want Start", p, got)
		}
		if a, b := w.Changes(p, t0, t0.Add(48*time.Hour)), flat.Changes(p, t0, t0.Add(48*time.Hour)); !slices.Equal(a, b) {
			t.Fatalf("page %d: History changed the change times", p)
		}
		if r := w.Rate(p); r == 0 {
			never = append(never, t0.Sub(lm).Seconds()/DefaultHistory.Seconds())
		} else if t0.Sub(lm) < DefaultHistory {
			fast = append(fast, t0.Sub(lm).Seconds()*r)
		}
	}
	// Uniform on [0, 1): mean 1/2; Exp(1): mean 1 (a gap capped by
	// History drops out, slightly lowering it).
	if m := mean(never); math.Abs(m-0.5) > 0.05 {
		t.Errorf("never-changing pages: version 0 age / History averages %.3f over %d pages, want 0.5", m, len(never))
	}
	if m := mean(fast); math.Abs(m-1) > 0.1 {
		t.Errorf("changing pages: version 0 age × rate averages %.3f over %d pages, want 1", m, len(fast))
	}
	clock.Set(t0.Add(90 * time.Minute))
	resp, _ := get(t, c, w.URL(3))
	if got, want := resp.Header.Get("Date"), t0.Add(90*time.Minute).Format(http.TimeFormat); got != want {
		t.Errorf("Date %s, want the web's clock %s", got, want)
	}
	if got, want := resp.Header.Get("Last-Modified"), w.lastChange(3, clock.Now()).UTC().Format(http.TimeFormat); got != want {
		t.Errorf("Last-Modified %s, want %s", got, want)
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
