package frontier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/urlnorm"
)

func TestLimitsShape(t *testing.T) {
	lim := Limits{MaxURLLength: 40, MaxPathSegments: 3, MaxSegmentRepeats: 2, MaxHostURLs: -1, MaxChildren: -1}
	lim.EnsureDefaults()
	tr := newTraps(lim)
	tests := []struct {
		url  string
		want refusal
	}{
		{"http://h.test/", admit},
		{"http://h.test/a/b/c", admit},
		{"http://h.test/a/b/c/", admit}, // the trailing empty segment adds no depth
		{"http://h.test/a/b/c/d", refuseSegments},
		{"http://h.test/a/a/", admit},
		{"http://h.test/a/a/a/", refuseRepeat},
		{"http://h.test/a/b/a?x=1", admit},
		{"http://h.test/a?q/a/a", refuseRepeat},             // queries are left out of the comparison
		{"http://h.test/" + strings.Repeat("x", 26), admit}, // 40 bytes
		{"http://h.test/" + strings.Repeat("x", 27), refuseLength},
		{"http://h.test//", admit}, // empty segments are not repeats
	}
	n := simpleNorm{}
	for _, tc := range tests {
		if got := tr.check(tc.url, "h.test", n.Segments(tc.url)); got != tc.want {
			t.Errorf("check(%q) = %d, want %d", tc.url, got, tc.want)
		}
	}
	s := tr.snapshot()
	if want := (LimitStats{TooLong: 1, TooManySegments: 1, RepeatedSegment: 2}); s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
}

func TestPrefixes(t *testing.T) {
	n := simpleNorm{}
	tests := []struct {
		url  string
		want []string
	}{
		{"http://h.test/", []string{"http://h.test", "http://h.test/"}},
		{"http://h.test/a/b", []string{"http://h.test", "http://h.test/a", "http://h.test/a/b"}},
		{"http://h.test/a/b/", []string{"http://h.test", "http://h.test/a", "http://h.test/a/b", "http://h.test/a/b/"}},
		// The query is a layer of its own: calendar days are children of
		// their path.
		{"http://h.test/cal?d=1", []string{"http://h.test", "http://h.test/cal", "http://h.test/cal?d=1"}},
		{"http://h.test/?d=1", []string{"http://h.test", "http://h.test/", "http://h.test/?d=1"}},
	}
	for _, tc := range tests {
		got := prefixes(nil, tc.url, n.Segments(tc.url))
		if !slices.Equal(got, tc.want) {
			t.Errorf("prefixes(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
	// A Normalizer whose segments do not join to the URL: the join wins.
	if got, want := prefixes(nil, "http://x.test/other", []string{"http://h.test", "a"}), []string{"http://h.test", "http://h.test/a"}; !slices.Equal(got, want) {
		t.Errorf("prefixes with foreign segments = %q, want %q", got, want)
	}
}

// TestSketchNeverUndercounts checks the count-min sketch's one guarantee
// the limits rely on: an estimate is at least the true count, also when
// a tiny sketch is full of collisions.
func TestSketchNeverUndercounts(t *testing.T) {
	for _, width := range []int{1, 8, 1 << 10} {
		tr := newTraps(Limits{MaxHostURLs: 1, MaxChildren: 1, SketchWidth: width})
		tr.allocLocked()
		want := map[string]uint64{}
		for i := range 5000 {
			k := "k" + strconv.Itoa(i%300)
			want[k]++
			tr.incrementLocked(k)
		}
		for k, n := range want {
			if got := tr.estimateLocked(k); got < n {
				t.Fatalf("width %d: estimate of %s = %d, below the true %d", width, k, got, n)
			}
		}
		if width == 1<<10 {
			// 300 keys in 1,024 counters a row: conservative update keeps
			// most estimates exact.
			exact := 0
			for k, n := range want {
				if tr.estimateLocked(k) == n {
					exact++
				}
			}
			if exact < 280 {
				t.Errorf("width %d: only %d of 300 estimates exact", width, exact)
			}
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		lim Limits
		ok  bool
	}{
		{Limits{}, true},
		{Limits{MaxURLLength: -1, MaxPathSegments: -1, MaxSegmentRepeats: -1, MaxHostURLs: -1, MaxChildren: -1}, true},
		{Limits{SketchWidth: -1}, false},
		{Limits{SketchWidth: 1 << 27}, false},
	}
	for _, tc := range tests {
		l := tc.lim
		l.EnsureDefaults()
		err := l.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidLimits)) {
			t.Errorf("Validate(%+v) = %v, want ok %v", tc.lim, err, tc.ok)
		}
		o := Options{Store: newMemStore(), Seen: newExactSeen(), Normalizer: simpleNorm{}, Admission: AdmissionOptions{Limits: tc.lim}}
		o.EnsureDefaults()
		if err := o.Validate(); (err == nil) != tc.ok {
			t.Errorf("Options.Validate with %+v = %v, want ok %v", tc.lim, err, tc.ok)
		}
	}
}

// trapWeb serves the crawler traps (calendar, session, deep and repeating paths) on host h.test, each under
// its own path.
func trapWeb(e Entry) Outcome {
	path := e.URL[len("http://h.test"):]
	switch {
	case strings.HasPrefix(path, "/deep/"):
		return Outcome{Fetched: true, Links: []string{"a/"}}
	case strings.HasPrefix(path, "/seg/"):
		// A new name per level: no segment repeats.
		return Outcome{Fetched: true, Links: []string{"n" + strconv.Itoa(strings.Count(path, "/")) + "/"}}
	case strings.HasPrefix(path, "/longer/"):
		return Outcome{Fetched: true, Links: []string{path + strings.Repeat("x", 128)}}
	case strings.HasPrefix(path, "/cal"):
		d, _ := strconv.Atoi(strings.TrimPrefix(path, "/cal?d="))
		return Outcome{Fetched: true, Links: []string{fmt.Sprintf("/cal?d=%d", d-1), fmt.Sprintf("/cal?d=%d", d+1)}}
	case strings.HasPrefix(path, "/session/"):
		id, _ := strconv.Atoi(strings.Split(path, "/")[2])
		return Outcome{Fetched: true, Links: []string{fmt.Sprintf("/session/%d/page", id*7+3)}}
	case strings.HasPrefix(path, "/wide/"):
		// A hub of fresh names, each linking to more.
		i, _ := strconv.Atoi(strings.TrimPrefix(path, "/wide/"))
		return Outcome{Fetched: true, Links: []string{fmt.Sprintf("/wide/%d", 2*i+1), fmt.Sprintf("/wide/%d", 2*i+2)}}
	}
	return Outcome{Fetched: true}
}

// TestTrapsCut crawls each trap alone and checks how many pages it gets
// and which limit stopped it.
func TestTrapsCut(t *testing.T) {
	tests := []struct {
		name  string
		seed  string
		opts  Options
		pages int
		want  LimitStats
	}{
		// Default limits. The seed is exempt; the trap is refused once,
		// on the page that would go one step further.
		{"deep relative path, default repeats", "/deep/", Options{}, 3, LimitStats{RepeatedSegment: 1}},
		// 22 + 128k bytes <= 2083: k = 0 ... 16.
		{"ever-longer URL, default length", "/longer/x", Options{}, 17, LimitStats{TooLong: 1}},
		{"ever-deeper distinct names, default segments", "/seg/", Options{Admission: AdmissionOptions{MaxDepth: 100}}, DefaultMaxPathSegments, LimitStats{TooManySegments: 1}},
		// Small limits make the counting heuristics visible. Seeds are
		// not counted: the seed and the limit's worth of pages.
		{"calendar, query variants of one path", "/cal?d=0", Options{Admission: AdmissionOptions{MaxDepth: 1000, Limits: Limits{MaxChildren: 25}}}, 26, LimitStats{TooManyChildren: 2}},
		{"session id in the path", "/session/1/page", Options{Admission: AdmissionOptions{MaxDepth: 1000, Limits: Limits{MaxChildren: 30}}}, 31, LimitStats{TooManyChildren: 1}},
		// 41 pages link to 82 distinct pages; 40 are admitted.
		{"per-host budget", "/wide/0", Options{Admission: AdmissionOptions{MaxDepth: 1000, Limits: Limits{MaxHostURLs: 40}}}, 41, LimitStats{HostBudget: 42}},
		// With the heuristics off, only the depth limit ends the calendar.
		{"calendar with depth only", "/cal?d=0", Options{Admission: AdmissionOptions{MaxDepth: 10, Limits: Limits{MaxChildren: -1}}}, 21, LimitStats{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := openTest(t, tc.opts)
			if _, err := f.AddSeeds(context.Background(), []string{"http://h.test" + tc.seed}); err != nil {
				t.Fatal(err)
			}
			var d driver
			if err := d.run(context.Background(), f, 1, trapWeb); err != nil {
				t.Fatal(err)
			}
			if got := len(d.fetched); got != tc.pages {
				last := d.urls()[got-1]
				t.Errorf("fetched %d pages, want %d (last %.100s)", got, tc.pages, last)
			}
			if got := f.Stats().Limits; got != tc.want {
				t.Errorf("limit counters %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestTrapsSeedsExempt: a seed is queued whatever its shape.
func TestTrapsSeedsExempt(t *testing.T) {
	f := openTest(t, Options{Admission: AdmissionOptions{Limits: Limits{MaxURLLength: 10}}})
	n, err := f.AddSeeds(context.Background(), []string{"http://h.test/a/a/a/a/" + strings.Repeat("x", 3000)})
	if err != nil || n != 1 {
		t.Fatalf("AddSeeds = %d, %v; want 1 queued", n, err)
	}
}

// TestTrapsCounterBoundedMemory checks that the sketch does not grow with
// the number of hosts and prefixes seen.
func TestTrapsCounterBoundedMemory(t *testing.T) {
	tr := newTraps(Limits{SketchWidth: 1 << 10, MaxHostURLs: 1 << 30, MaxChildren: 1 << 30})
	if tr.cells != nil || tr.known != nil {
		t.Fatal("sketch allocated before the first discovered link")
	}
	n := simpleNorm{}
	before := -1
	for i := range 5000 {
		if i == 1 {
			before = len(tr.cells)
		}
		u := fmt.Sprintf("http://h%d.test/p%d/x", i, i)
		if r := tr.check(u, fmt.Sprintf("h%d.test", i), n.Segments(u)); r != admit {
			t.Fatalf("%s refused (%d)", u, r)
		}
		tr.added(u, fmt.Sprintf("h%d.test", i), n.Segments(u))
	}
	if len(tr.cells) != before || before != sketchRows<<10 {
		t.Errorf("sketch has %d cells after 5,000 hosts, %d before; want %d", len(tr.cells), before, sketchRows<<10)
	}
}

// FuzzLimits runs arbitrary references through the real normalizer and
// the limits: no panic, and the prefixes are each a prefix of the next,
// ending with the URL.
func FuzzLimits(f *testing.F) {
	for _, s := range []string{"http://h.test/", "http://h.test/a/a/a/", "http://h.test/cal?d=1", "http://h.test/a?b/c?d", "http://[::1]:80/%00/\xff?"} {
		f.Add(s)
	}
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		f.Fatal(err)
	}
	tr := newTraps(Limits{MaxURLLength: 200, MaxPathSegments: 5, MaxSegmentRepeats: 1, MaxHostURLs: 50, MaxChildren: 3, SketchWidth: 64, Prefixes: 1000})
	f.Fuzz(func(t *testing.T, ref string) {
		canon, err := n.Resolve("http://h.test/dir/page", ref)
		if err != nil {
			return
		}
		segs := n.Segments(canon)
		ps := prefixes(nil, canon, segs)
		if len(ps) == 0 || ps[len(ps)-1] != canon {
			t.Fatalf("prefixes of %q = %q: must end with the URL", canon, ps)
		}
		for i := 1; i < len(ps); i++ {
			if !strings.HasPrefix(ps[i], ps[i-1]) || len(ps[i]) <= len(ps[i-1]) {
				t.Fatalf("prefixes of %q = %q: %q does not extend %q", canon, ps, ps[i], ps[i-1])
			}
		}
		if tr.check(canon, "h.test", segs) == admit {
			tr.added(canon, "h.test", segs)
		}
	})
}

// BenchmarkLimits measures the limits' cost per discovered link (check
// and, for a new URL, added), against the shape checks alone.
func BenchmarkLimits(b *testing.B) {
	n := simpleNorm{}
	urls := make([]string, 4096)
	segs := make([][]string, len(urls))
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.test/section-%d/article/%d.html?ref=%d", i%50, i%97, i, i%13)
		segs[i] = n.Segments(urls[i])
	}
	for _, bc := range []struct {
		name string
		lim  Limits
	}{
		{"shape only", Limits{MaxHostURLs: -1, MaxChildren: -1}},
		{"all limits", Limits{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := bc.lim
			l.EnsureDefaults()
			tr := newTraps(l)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				j := i % len(urls)
				if tr.check(urls[j], "h.test", segs[j]) == admit {
					tr.added(urls[j], "h.test", segs[j])
				}
			}
		})
	}
}
