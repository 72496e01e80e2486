package linkweb

import (
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func generate(t testing.TB, o Options) *Graph {
	t.Helper()
	g, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestHostSizes(t *testing.T) {
	for _, tc := range []struct {
		pages, hosts int
		a            float64
	}{{100_000, 200, 1}, {100_000, 200, 0.7}, {100_000, 200, 0}, {1000, 7, 1}, {50, 50, 1}, {51, 50, 2}} {
		start := hostSizes(tc.pages, tc.hosts, tc.a)
		if got := int(start[tc.hosts]); got != tc.pages {
			t.Errorf("%+v: sizes add up to %d, want %d", tc, got, tc.pages)
		}
		for h := range tc.hosts {
			size := start[h+1] - start[h]
			if size < 1 {
				t.Errorf("%+v: host %d has %d pages", tc, h, size)
			}
			if h > 0 {
				prev := start[h] - start[h-1]
				if size > prev+1 || (tc.a == 0 && prev-size > 1) {
					t.Errorf("%+v: host %d has %d pages after %d", tc, h, size, prev)
				}
			}
		}
	}
	// Zipf's law with exponent 1: host 0 holds about 1/H(200) = 17% of
	// 100,000 pages, host 9 a tenth of that.
	s := hostSizes(100_000, 200, 1)
	if h0, h9 := s[1]-s[0], s[10]-s[9]; h0 < 16_800 || h0 > 17_100 || math.Abs(float64(h0)/float64(h9)-10) > 0.1 {
		t.Errorf("host 0 has %d pages, host 9 %d: want about 16,980 and a tenth", h0, h9)
	}
}

// TestReachable checks that every page is reached from its host's root
// through links of its own host alone.
func TestReachable(t *testing.T) {
	for _, a := range []float64{1, 0.7, 0} {
		g := generate(t, Options{Seed: 3, Pages: 20_000, Hosts: 40, HostExponent: a})
		seen := make([]bool, g.Pages())
		for h := range g.Hosts() {
			queue := []int{g.HostStart(h)}
			seen[queue[0]] = true
			for len(queue) > 0 {
				p := queue[0]
				queue = queue[1:]
				for _, q := range g.Out(p) {
					if g.HostOf(int(q)) == h && !seen[q] {
						seen[q] = true
						queue = append(queue, int(q))
					}
				}
			}
		}
		if i := slices.Index(seen, false); i >= 0 {
			t.Errorf("exponent %v: page %d (host %d) unreachable from its root", a, i, g.HostOf(i))
		}
	}
}

func TestLinks(t *testing.T) {
	g := generate(t, Options{Seed: 4, Pages: 20_000, Hosts: 40, HostExponent: 1})
	same, cross, in := 0, 0, 0
	for p := range g.Pages() {
		out := g.Out(p)
		if slices.Contains(out, int32(p)) {
			t.Fatalf("page %d links to itself", p)
		}
		s := slices.Clone(out)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(out) {
			t.Fatalf("page %d links to a page twice: %v", p, out)
		}
		for _, q := range out {
			if g.HostOf(int(q)) == g.HostOf(p) {
				same++
			} else {
				cross++
			}
		}
	}
	for p := range g.Pages() {
		in += g.InDegree(p)
	}
	if in != g.Links() || same+cross != g.Links() {
		t.Errorf("in-degrees add up to %d, links %d, same+cross %d", in, g.Links(), same+cross)
	}
	// Extra links: 12 a page on average, a quarter to other hosts (less
	// the duplicates dropped); tree links: one per page but the roots.
	perPage := float64(g.Links()-(g.Pages()-g.Hosts())) / float64(g.Pages())
	if perPage < 10 || perPage > 12 {
		t.Errorf("%.2f extra links per page, want 10-12 (12 drawn, duplicates dropped)", perPage)
	}
	if share := float64(cross) / float64(g.Links()-(g.Pages()-g.Hosts())); share < 0.22 || share > 0.28 {
		t.Errorf("%.3f of the extra links go to other hosts, want about 0.25", share)
	}
}

func TestDeterministic(t *testing.T) {
	o := Options{Seed: 7, Pages: 5000, Hosts: 20, HostExponent: 0.7}
	a, b := generate(t, o), generate(t, o)
	for p := range a.Pages() {
		if !slices.Equal(a.Out(p), b.Out(p)) || a.PageRank(p) != b.PageRank(p) {
			t.Fatalf("seed %d: page %d differs between two generations", o.Seed, p)
		}
	}
	o.Seed = 8
	c := generate(t, o)
	differ := 0
	for p := range a.Pages() {
		if !slices.Equal(a.Out(p), c.Out(p)) {
			differ++
		}
	}
	if differ < a.Pages()/2 {
		t.Errorf("seeds 7 and 8 give %d of %d pages different links", differ, a.Pages())
	}
}

// TestPageRankHand compares PageRank with ranks computed by hand from the
// equations r = (1-d)/n + d·(Σ r(j)/out(j) + dangling/n).
func TestPageRankHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  [][]int32
		want []float64
	}{
		{"cycle", [][]int32{{1}, {2}, {0}}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		// A→B, A→C, B→C, C→A: a = 0.05 + 0.85c, b = 0.05 + 0.425a,
		// c = 0.05 + 0.85(a/2 + b), so a = 0.128625/0.3316875.
		{"page-brin", [][]int32{{1, 2}, {2}, {0}}, []float64{0.128625 / 0.3316875, 0.05 + 0.425*0.128625/0.3316875, 0.0925 + 0.78625*0.128625/0.3316875}},
		// A→B, B dangling: a = 0.075 + 0.425b, a + b = 1, so a = 0.5/1.425.
		{"dangling", [][]int32{{1}, {}}, []float64{0.5 / 1.425, 1 - 0.5/1.425}},
		{"all dangling", [][]int32{{}, {}, {}, {}}, []float64{0.25, 0.25, 0.25, 0.25}},
	} {
		got := PageRank(tc.out, 0.85)
		for i := range tc.want {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("%s: rank of %d = %.12f, want %.12f", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestPageRankGraph(t *testing.T) {
	g := generate(t, Options{Seed: 5, Pages: 20_000, Hosts: 40, HostExponent: 1})
	sum := 0.0
	pr := make([]float64, g.Pages())
	for p := range g.Pages() {
		pr[p] = g.PageRank(p)
		sum += pr[p]
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("PageRank adds up to %.12f", sum)
	}
	// Stationary: one more step of the iteration leaves it in place.
	next := make([]float64, len(pr))
	for p := range g.Pages() {
		for _, q := range g.Out(p) {
			next[q] += Damping * pr[p] / float64(len(g.Out(p)))
		}
	}
	l1 := 0.0
	for p := range next {
		l1 += math.Abs(next[p] + (1-Damping)/float64(len(pr)) - pr[p]) // no dangling page here
	}
	if l1 > 1e-9 {
		t.Errorf("one more iteration moves PageRank by %g (L1)", l1)
	}
	if root := g.PageRank(0); root < 100*sum/float64(g.Pages()) {
		t.Errorf("the largest host's root has rank %g, not far above the mean %g", root, 1/float64(g.Pages()))
	}
}

// TestInDegreePowerLaw fits log P(in-degree >= x) against log x over the
// tail and wants a straight line of power-law slope.
func TestInDegreePowerLaw(t *testing.T) {
	g := generate(t, Options{Seed: 6, HostExponent: 1})
	deg := make([]int, g.Pages())
	for p := range deg {
		deg[p] = g.InDegree(p)
	}
	slices.Sort(deg)
	var xs, ys []float64
	for x := 32; x <= 4096; x *= 2 {
		i, _ := slices.BinarySearch(deg, x)
		xs = append(xs, math.Log(float64(x)))
		ys = append(ys, math.Log(float64(len(deg)-i)/float64(len(deg))))
	}
	slope, r2 := fit(xs, ys)
	if slope > -0.7 || slope < -2.5 || r2 < 0.97 {
		t.Errorf("CCDF of in-degree 32-4096: slope %.2f, R² %.3f; want a power law (slope in [-2.5, -0.7], R² >= 0.97)", slope, r2)
	}
	if top := g.TopByInDegree(0.01); len(top) != 1000 || g.InDegree(top[0]) < 50*deg[len(deg)/2] {
		t.Errorf("top 1%%: %d pages, the first with in-degree %d; median %d", len(top), g.InDegree(top[0]), deg[len(deg)/2])
	}
	t.Logf("CCDF slope %.2f, R² %.3f, median in-degree %d, max %d", slope, r2, deg[len(deg)/2], deg[len(deg)-1])
}

func fit(xs, ys []float64) (slope, r2 float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy, syy float64
	for i := range xs {
		sx, sy, sxx, sxy, syy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i], syy+ys[i]*ys[i]
	}
	slope = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	r := (n*sxy - sx*sy) / math.Sqrt((n*sxx-sx*sx)*(n*syy-sy*sy))
	return slope, r * r
}

func TestValidate(t *testing.T) {
	for _, o := range []Options{
		{Hosts: 10, Pages: 5},
		{Hosts: MaxHosts + 1, Pages: MaxHosts + 1},
		{HostExponent: -1},
		{MinLinks: 5, MaxLinks: 3},
		{SameHost: 1.5},
		{TargetExponent: -1},
	} {
		if _, err := Generate(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Generate(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

var hrefRE = regexp.MustCompile(`href="([^"]+)"`)

// TestServe crawls a small web breadth-first with a plain client and
// wants every page fetched, each page's links as in the graph.
func TestServe(t *testing.T) {
	g := generate(t, Options{Seed: 9, Pages: 600, Hosts: 6, HostExponent: 1})
	w, err := Start(g, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	get := func(u string) (int, string) {
		t.Helper()
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b)
	}
	seen := map[int]bool{}
	queue := w.Roots()
	for _, r := range queue {
		p, ok := w.PageOf(r)
		if !ok || g.HostStart(g.HostOf(p)) != p {
			t.Fatalf("root %s is page %d, %v", r, p, ok)
		}
		seen[p] = true
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		p, _ := w.PageOf(u)
		code, body := get(u)
		if code != 200 {
			t.Fatalf("GET %s: %d", u, code)
		}
		var links []int32
		for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
			href := m[1]
			if strings.HasPrefix(href, "/") {
				href = u[:strings.Index(u[len("http://"):], "/")+len("http://")] + href
			}
			q, ok := w.PageOf(href)
			if !ok {
				t.Fatalf("page %d links to %s, no page", p, m[1])
			}
			links = append(links, int32(q))
			if !seen[q] {
				seen[q] = true
				queue = append(queue, href)
			}
		}
		if !slices.Equal(links, g.Out(p)) {
			t.Fatalf("page %d links to %v, want %v", p, links, g.Out(p))
		}
	}
	if len(seen) != g.Pages() {
		t.Errorf("crawled %d pages of %d", len(seen), g.Pages())
	}
	root := "http://" + w.authority(0)
	for _, path := range []string{"/robots.txt", "/s0/p0", "/s1/p5", "/s0/p05", "/s0/p1?x", "/s0/p100000"} {
		if code, _ := get(root + path); code != 404 {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
	if _, ok := w.PageOf("http://127.35.1.99:" + root[strings.LastIndex(root, ":")+1:] + "/"); ok {
		t.Error("PageOf maps a host past the last")
	}
}
