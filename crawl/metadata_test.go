package crawl

import (
	"net/url"
	"testing"
)

// checkResolver resolves ref against each base through r and directly
// (url.URL.Parse), and fails on any difference: a memoized result reused
// for a base it does not belong to would show here.
func checkResolver(t *testing.T, r *outlinkResolver, bases []string, ref string) {
	t.Helper()
	for _, b := range bases {
		base, err := url.Parse(b)
		if err != nil {
			continue
		}
		want, wantOK := resolveRef(base, ref)
		got, ok := r.resolve(base, newResolveKeys(base), ref)
		if got != want || ok != wantOK {
			t.Fatalf("base %q, ref %q: memoized %q %v, direct %q %v", b, ref, got, ok, want, wantOK)
		}
	}
}

func TestOutlinkResolver(t *testing.T) {
	bases := []string{
		"http://a.test/dir/page.html?q=1#top",
		"http://a.test/dir/other.html",
		"http://a.test/dir/other.html?q=2",
		"http://a.test/dir/",
		"http://a.test/dir",
		"http://a.test/Dir/page.html",
		"http://b.test/dir/page.html",
		"https://a.test/dir/page.html",
		"http://u:p@a.test/dir/page.html",
		"http://a.test:8080/dir/page.html",
		"http://a.test/d%2Fir/page.html",
		"http://a.test/dir/page.html?x=/y/z",
		"http://a.test",
		"mailto:x@a.test",
	}
	refs := []string{"", "?", "?a=b", "#f", "x.html", "./x.html", "../x.html", "../../../x",
		"/abs", "//c.test/x", "https://d.test/x?y#z", "x.html?q#f", "%zz", ":bad", "sub/", ".", "..",
		"x y", "%2e%2e/x", "?q#f", "//", "//c.test", "///x", "http:", "x:y"}
	r := new(outlinkResolver)
	for round := range 2 { // the second round reads the memoized results
		for _, ref := range refs {
			checkResolver(t, r, bases, ref)
		}
		if round == 0 && len(r.m) == 0 {
			t.Fatal("nothing memoized")
		}
	}
	// A full map starts again.
	r.m = make(map[resolveKey]resolved)
	for i := range maxResolved + 10 {
		base, _ := url.Parse("http://a.test/p")
		r.resolve(base, newResolveKeys(base), "x"+string(rune('a'+i%26))+string(rune(i)))
	}
	if len(r.m) > maxResolved {
		t.Errorf("%d results kept, at most %d wanted", len(r.m), maxResolved)
	}
	// So does one holding maxResolvedBytes of strings.
	long := make([]byte, 64<<10)
	for i := range long {
		long[i] = 'a'
	}
	for i := range 2 * maxResolvedBytes / len(long) {
		base, _ := url.Parse("http://a.test/p")
		r.resolve(base, newResolveKeys(base), string(long)+string(rune('a'+i%26))+string(rune(i)))
		if r.bytes > maxResolvedBytes {
			t.Fatalf("%d bytes of strings kept, at most %d wanted", r.bytes, maxResolvedBytes)
		}
	}
	var nilResolver *outlinkResolver
	checkResolver(t, nilResolver, bases, "../x.html")
}

// FuzzOutlinkResolver: resolving through the memo, against two bases in
// turn, gives what url.URL.Parse gives.
func FuzzOutlinkResolver(f *testing.F) {
	f.Add("http://a.test/dir/page.html?q=1", "http://a.test/dir/other.html", "../x.html")
	f.Add("http://a.test/dir/page.html?q=1", "http://a.test/dir/other.html?q=2", "")
	f.Add("http://a.test/dir/page.html#a", "http://a.test/dir/page.html", "?x")
	f.Add("http://a.test/d%2Fir/p", "http://a.test/d/ir/p", "x")
	f.Fuzz(func(t *testing.T, b1, b2, ref string) {
		checkResolver(t, new(outlinkResolver), []string{b1, b2, b1}, ref)
	})
}
