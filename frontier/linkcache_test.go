package frontier

import (
	"testing"

	"github.com/layercrawl/layercrawl/urlnorm"
)

func TestPageKeys(t *testing.T) {
	for _, tc := range []struct{ base, dir, full string }{
		{"http://a.test/x/y.html?q=1#f", "http://a.test/x/", "http://a.test/x/y.html?q=1"},
		{"http://a.test/", "http://a.test/", "http://a.test/"},
		{"http://a.test", "http://a.test", "http://a.test"},
		{"http://a.test/x/?q=/z/", "http://a.test/x/", "http://a.test/x/?q=/z/"},
	} {
		k := newPageKeys(tc.base)
		if k.dir != tc.dir || k.full != tc.full {
			t.Errorf("newPageKeys(%q) = %q, %q; want %q, %q", tc.base, k.dir, k.full, tc.dir, tc.full)
		}
	}
	for _, tc := range []struct {
		ref  string
		want bool
	}{
		{"", true}, {"?a", true}, {"#top", true}, {" \t?a", true}, {"\n#x", true},
		{"a/b", false}, {"/a", false}, {"http:x", false}, {"//h/x", false}, {" x?y", false},
	} {
		if got := dependsOnWholeBase(tc.ref); got != tc.want {
			t.Errorf("dependsOnWholeBase(%q) = %v, want %v", tc.ref, got, tc.want)
		}
	}
}

// checkSameKeySameURL is the cache's correctness property: two links with
// the same key resolve to the same canonical URL (or both fail).
func checkSameKeySameURL(t *testing.T, n *urlnorm.Normalizer, base1, base2, ref string) {
	if newPageKeys(base1).key(ref) != newPageKeys(base2).key(ref) {
		return
	}
	u1, err1 := n.Resolve(base1, ref)
	u2, err2 := n.Resolve(base2, ref)
	if u1 != u2 || (err1 == nil) != (err2 == nil) {
		t.Errorf("ref %q: one key for bases %q and %q, but %q (%v) and %q (%v)", ref, base1, base2, u1, err1, u2, err2)
	}
}

func TestLinkCacheKeyResolvesOnce(t *testing.T) {
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bases := []string{"http://a.test/d/p.html", "http://a.test/d/q.html?x=1", "http://a.test/d/", "http://a.test/d/p.html#f",
		"https://a.test/d/p.html", "http://b.test/d/p.html", "http://a.test/e/p.html"}
	refs := []string{"", "?y", "#z", "x.html", "../u", "./v?w", "/root", "//c.test/p", "http:same", "https:other",
		"HTTP://A.TEST/d/x", " x", "\tx", "x\ny", "\\back", "..", ".", "?", "#", "mailto:a@b"}
	for _, b1 := range bases {
		for _, b2 := range bases {
			for _, r := range refs {
				checkSameKeySameURL(t, n, b1, b2, r)
			}
		}
	}
}

func FuzzLinkCacheKey(f *testing.F) {
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("http://a.test/d/p.html", "q.html?x", "x.html")
	f.Add("http://a.test/d/p.html", "q.html", "?q")
	f.Add("http://a.test/d/p", "p#x", "")
	f.Add("http://a.test/d/p", "%2e%2e/x", "y")
	f.Fuzz(func(t *testing.T, base1, other, ref string) {
		// Bases come from fetched pages: canonical URLs. The second base
		// is another page of the first one's directory, so that the keys
		// are often equal and the property is put to the test.
		b1, err := n.Normalize(base1)
		if err != nil {
			return
		}
		b2, err := n.Normalize(newPageKeys(b1).dir + other)
		if err != nil {
			return
		}
		checkSameKeySameURL(t, n, b1, b2, ref)
	})
}

func TestLinkCacheHit(t *testing.T) {
	c := newLinkCache(4)
	k := newPageKeys("http://a.test/d/p.html").key("x.html")
	if c.has(k) {
		t.Fatal("empty cache has a key")
	}
	c.add(k)
	if !c.has(k) || !c.has(newPageKeys("http://a.test/d/other.html?q").key("x.html")) {
		t.Error("a page of the same directory does not find the link")
	}
	if c.has(newPageKeys("http://a.test/e/p.html").key("x.html")) {
		t.Error("a page of another directory finds the link")
	}
}
