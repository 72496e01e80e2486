package frontier

import (
	"testing"

	"github.com/layercrawl/layercrawl/urlnorm"
)

// Requisites are exempt from the depth limit and admitted outside the
// scope up to MaxEmbedHops embed hops; links from them are not.
func TestAdmissionEmbeds(t *testing.T) {
	tests := []struct {
		name      string
		maxEmbeds int
		parent    Entry
		embed     bool
		ref       string
		wantHops  string
		want      Refusal
	}{
		{"in-scope image", 0, Entry{URL: "http://site.test/p", Depth: 2, Hops: "LL"}, true, "/i.png", "LLE", Admitted},
		{"image of a page at the depth limit", 0, Entry{URL: "http://site.test/p", Depth: 3, Hops: "LLL"}, true, "/i.png", "LLLE", Admitted},
		{"link at the depth limit", 0, Entry{URL: "http://site.test/p", Depth: 3, Hops: "LLL"}, false, "/q", "", RefusedDepth},
		{"CDN stylesheet", 0, Entry{URL: "http://site.test/p", Depth: 1, Hops: "L"}, true, "http://cdn.test/s.css", "LE", Admitted},
		{"CDN font of a CDN stylesheet", 0, Entry{URL: "http://cdn.test/s.css", Depth: 2, Hops: "LE"}, true, "f.woff", "LEE", Admitted},
		{"third embed hop off scope", 0, Entry{URL: "http://cdn.test/f.css", Depth: 3, Hops: "LEE"}, true, "g.png", "", RefusedScope},
		{"third embed hop, no limit", -1, Entry{URL: "http://cdn.test/f.css", Depth: 3, Hops: "LEE"}, true, "g.png", "LEEE", Admitted},
		{"one embed hop allowed", 1, Entry{URL: "http://cdn.test/s.css", Depth: 2, Hops: "LE"}, true, "f.woff", "", RefusedScope},
		{"embed after a redirected embed", 0, Entry{URL: "http://cdn.test/s2.css", Depth: 3, Hops: "LER"}, true, "f.woff", "LERE", Admitted},
		{"link on a CDN page", 0, Entry{URL: "http://cdn.test/x.html", Depth: 2, Hops: "LE"}, false, "y.html", "", RefusedScope},
		{"in-scope embed of a link of an embed", 0, Entry{URL: "http://site.test/x.html", Depth: 3, Hops: "LEL"}, true, "http://cdn.test/z.png", "LELE", Admitted},
	}
	for _, tc := range tests {
		a := newTestAdmission(t, AdmissionOptions{MaxDepth: 3, MaxEmbedHops: tc.maxEmbeds})
		a.AddScope([]string{"site.test"}, []string{"site.test"})
		p := a.Links(tc.parent, "")
		check := p.Link
		if tc.embed {
			check = p.Embed
		}
		c, r := check(tc.ref)
		if r != tc.want || c.Hops != tc.wantHops {
			t.Errorf("%s: got %v with hops %q, want %v with %q", tc.name, r, c.Hops, tc.want, tc.wantHops)
		}
		if r == Admitted && c.Depth != tc.parent.Depth+1 {
			t.Errorf("%s: depth %d, want %d", tc.name, c.Depth, tc.parent.Depth+1)
		}
	}
}

// A redirect of a requisite stays a requisite: outside the scope and past
// the depth limit, it is admitted.
func TestAdmissionEmbedRedirect(t *testing.T) {
	a := newTestAdmission(t, AdmissionOptions{MaxDepth: 1})
	a.AddScope([]string{"site.test"}, nil)
	c, r := a.Redirect(Entry{URL: "http://cdn.test/a.css", Depth: 2, Hops: "LE"}, "http://cdn2.test/a.css")
	if r != Admitted || c.Hops != "LER" || c.Redirects != 1 {
		t.Errorf("redirect of a requisite: %v, %+v", r, c)
	}
	if _, r := a.Redirect(Entry{URL: "http://site.test/a", Depth: 1, Hops: "L"}, "http://site.test/b"); r != RefusedDepth {
		t.Errorf("redirect of a link past the depth limit: %v, want %v", r, RefusedDepth)
	}
}

func TestAppendHopKeepsTail(t *testing.T) {
	p := ""
	for range MaxHopPath + 10 {
		p = appendHop(p, HopLink)
	}
	p = appendHop(p, HopEmbed)
	if len(p) != MaxHopPath || p[len(p)-1] != HopEmbed {
		t.Errorf("hop path of %d letters ending %q", len(p), p[len(p)-3:])
	}
}

// Sitemaps named by robots.txt hang off the robots.txt, whatever page led
// to it; the pages they list are one more sitemap hop away.
func TestAdmissionSitemaps(t *testing.T) {
	a := newTestAdmission(t, AdmissionOptions{MaxDepth: 3})
	a.AddScope([]string{"site.test"}, nil)
	page := Entry{URL: "http://site.test/deep/page", Depth: 3, Hops: "LLL"}
	out := Outcome{RobotsSitemaps: []string{"http://site.test/sitemap.xml", "http://other.test/sitemap.xml"}}
	var got []Candidate
	var refused []Refusal
	err := SitemapCandidates(a, page, out, func(c Candidate, r Refusal) error {
		if r == Admitted {
			got = append(got, c)
		} else {
			refused = append(refused, r)
		}
		return nil
	})
	if err != nil || len(got) != 1 || len(refused) != 1 || refused[0] != RefusedScope {
		t.Fatalf("robots sitemaps: %+v, %v, %v", got, refused, err)
	}
	sm := got[0].entry()
	if want := (Entry{URL: "http://site.test/sitemap.xml", Depth: 1, Via: "http://site.test/robots.txt", Hops: "S", Sitemap: true, host: "site.test"}); sm != want {
		t.Errorf("sitemap entry %+v, want %+v", sm, want)
	}
	got = nil
	out = Outcome{Sitemaps: []string{"http://site.test/s1.xml.gz"}, Listed: []Listed{{URL: "http://site.test/only"}}}
	if err := SitemapCandidates(a, sm, out, func(c Candidate, r Refusal) error {
		if r != Admitted {
			t.Errorf("refused %v", r)
		}
		got = append(got, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Sitemap || got[0].Hops != "SS" || got[1].Sitemap || got[1].Hops != "SS" || got[1].Depth != 2 {
		t.Errorf("index children and listed pages: %+v", got)
	}
}

// FuzzAdmissionEmbed checks the embed rule against the link rule on any
// page, hop path and reference: a requisite is never refused for depth,
// never refused where a link to the same reference is admitted, and its
// hop path is the page's with an embed hop appended.
func FuzzAdmissionEmbed(f *testing.F) {
	f.Add("http://h.test/a/", "LL", "i.png", 3)
	f.Add("http://cdn.test/s.css", "LE", "f.woff", 2)
	f.Add("http://cdn.test/f.css", "LEE", "../x.png", 3)
	f.Add("http://h.test/", "", "http://other.test/?q=1#f", 0)
	f.Add("http://h.test/", "LRERE", "//cdn.test/a", 40)
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		f.Fatal(err)
	}
	a, err := NewAdmission(n, nil, AdmissionOptions{MaxDepth: 3, Limits: Limits{MaxHostURLs: -1, MaxChildren: -1}})
	if err != nil {
		f.Fatal(err)
	}
	a.AddScope([]string{"h.test"}, []string{"h.test"})
	f.Fuzz(func(t *testing.T, page, hops, ref string, depth int) {
		if len(hops) > MaxHopPath || depth < 0 || depth > 1<<20 {
			return
		}
		parent := Entry{URL: page, Depth: depth, Hops: hops}
		links := a.Links(parent, "")
		e, er := links.Embed(ref)
		l, lr := links.Link(ref)
		if er == RefusedDepth {
			t.Fatalf("Embed(%q) from %+v refused for depth", ref, parent)
		}
		if lr == Admitted && (er != Admitted || e.URL != l.URL) {
			t.Fatalf("Link(%q) from %+v admitted %q, Embed gave %v %q", ref, parent, l.URL, er, e.URL)
		}
		if er == Admitted {
			if want := appendHop(hops, HopEmbed); e.Hops != want || e.Depth != depth+1 {
				t.Fatalf("Embed(%q) from %+v: hops %q depth %d, want %q %d", ref, parent, e.Hops, e.Depth, want, depth+1)
			}
		}
	})
}
