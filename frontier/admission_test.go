package frontier

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/layercrawl/layercrawl/urlnorm"
)

func newTestAdmission(t *testing.T, o AdmissionOptions) *Admission {
	t.Helper()
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAdmission(n, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAdmissionLink(t *testing.T) {
	a := newTestAdmission(t, AdmissionOptions{
		Scope:        ScopeHost,
		Deny:         []*regexp.Regexp{regexp.MustCompile(`/private/`)},
		MaxDepth:     2,
		MaxRedirects: 1,
		Limits:       Limits{MaxSegmentRepeats: 2, MaxPathSegments: 4, MaxURLLength: 60, MaxHostURLs: -1, MaxChildren: -1},
	})
	sd, err := a.ParseSeed("HTTP://Site.TEST/")
	if err != nil {
		t.Fatal(err)
	}
	if sd.URL != "http://site.test/" || sd.Host != "site.test" || sd.Domain != "site.test" {
		t.Fatalf("ParseSeed = %+v", sd)
	}
	a.AddScope([]string{sd.Host}, []string{sd.Domain})
	page := Entry{URL: "http://site.test/a/", Depth: 1, Redirects: 1}
	tests := []struct {
		name     string
		redirect bool
		base     string
		ref      string
		wantURL  string
		want     Refusal
	}{
		{"relative link", false, "", "b", "http://site.test/a/b", Admitted},
		{"base href", false, "http://site.test/x/", "y", "http://site.test/x/y", Admitted},
		{"other host", false, "", "http://other.test/", "", RefusedScope},
		{"denied", false, "", "/private/p", "", RefusedFiltered},
		{"not http", false, "", "mailto:x@site.test", "", RefusedInvalid},
		{"repeated segment", false, "", "a/a/", "", RefusedRepeatedSegment},
		{"too many segments", false, "", "/p/q/r/s/t", "", RefusedTooManySegments},
		{"too long", false, "", "/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "", RefusedTooLong},
		{"second redirect", true, "", "/r", "", RefusedRedirects},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Candidate
			var got Refusal
			if tc.redirect {
				c, got = a.Redirect(page, tc.ref)
			} else {
				c, got = a.Link(page, tc.base, tc.ref)
			}
			if got != tc.want || c.URL != tc.wantURL {
				t.Fatalf("got (%q, %v), want (%q, %v)", c.URL, got, tc.wantURL, tc.want)
			}
			if got == Admitted && (c.Depth != 2 || c.Redirects != 0 || c.Via != page.URL || c.Host != "site.test" || len(c.Segments) == 0) {
				t.Fatalf("candidate %+v", c)
			}
		})
	}
	deep := Entry{URL: "http://site.test/", Depth: 2}
	if _, got := a.Link(deep, "", "/d"); got != RefusedDepth {
		t.Fatalf("link beyond MaxDepth: got %v, want %v", got, RefusedDepth)
	}
	got := a.Stats()
	want := AdmissionStats{Invalid: 1, TooDeep: 1, TooManyRedirects: 1, OutOfScope: 1, Filtered: 1,
		Limits: LimitStats{TooLong: 1, TooManySegments: 1, RepeatedSegment: 1}}
	if got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestAdmissionSeedsSkipTrapsAndScope(t *testing.T) {
	a := newTestAdmission(t, AdmissionOptions{Limits: Limits{MaxSegmentRepeats: 1}})
	// No scope recorded: a seed is checked without it, and trap limits do
	// not apply to seeds.
	if c, r := a.CheckSeed("http://h.test/a/a/a"); r != Admitted || c.Via != "" {
		t.Fatalf("CheckSeed = (%+v, %v), want admitted", c, r)
	}
	if _, r := a.CheckSeed("ftp://h.test/"); r != RefusedInvalid {
		t.Fatalf("CheckSeed(ftp) = %v, want %v", r, RefusedInvalid)
	}
	if _, err := a.ParseSeed("::"); !errors.Is(err, ErrSeed) {
		t.Fatalf("ParseSeed(::) error %v, want ErrSeed", err)
	}
	if s := a.Stats().Limits.Total(); s != 0 {
		t.Fatalf("seeds counted by trap limits: %d", s)
	}
}

func TestAdmissionHostBudgetCountsAdded(t *testing.T) {
	a := newTestAdmission(t, AdmissionOptions{Scope: ScopeAny, Limits: Limits{MaxHostURLs: 2, SketchWidth: 64}})
	parent := Entry{URL: "http://h.test/"}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, r := a.Link(parent, "", "/p"+string(rune('0'+i)))
			if r != Admitted {
				t.Errorf("link %d refused: %v", i, r)
				return
			}
			a.Added(c)
		}()
	}
	wg.Wait()
	if _, r := a.Link(parent, "", "/p9"); r != RefusedHostBudget {
		t.Fatalf("third URL of the host: got %v, want %v", r, RefusedHostBudget)
	}
	if got := a.Stats().Limits.HostBudget; got != 1 {
		t.Fatalf("HostBudget = %d, want 1", got)
	}
}

func TestRefusalString(t *testing.T) {
	for r := Admitted; r < numRefusals; r++ {
		if r.String() == "" {
			t.Errorf("Refusal(%d) has no name", r)
		}
	}
	if got, want := Refusal(200).String(), "Refusal(200)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// FuzzAdmissionLink: any reference on any page is admitted with a
// canonical http(s) URL or refused with a reason, never a panic, and an
// admitted URL's segments are those of the normalizer.
func FuzzAdmissionLink(f *testing.F) {
	for _, s := range [][2]string{
		{"http://h.test/a/", "b"},
		{"http://h.test/a/", "../../../x"},
		{"http://h.test/", "http://other.test/?q=1#f"},
		{"http://h.test/", "javascript:void(0)"},
		{"http://h.test/a/a/", "a/"},
		{"", "%zz"},
		{"http://h.test/", "//[::1]:80/"},
	} {
		f.Add(s[0], s[1])
	}
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		f.Fatal(err)
	}
	a, err := NewAdmission(n, nil, AdmissionOptions{Scope: ScopeAny, Limits: Limits{SketchWidth: 64, Prefixes: 1000}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, page, ref string) {
		c, r := a.Link(Entry{URL: page}, "", ref)
		if r >= numRefusals {
			t.Fatalf("Link(%q, %q): unknown refusal %d", page, ref, r)
		}
		if r != Admitted {
			if c.URL != "" {
				t.Fatalf("Link(%q, %q) refused (%v) with URL %q", page, ref, r, c.URL)
			}
			return
		}
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
			t.Fatalf("Link(%q, %q) admitted %q", page, ref, c.URL)
		}
		if got, want := strings.Join(c.Segments, "\x00"), strings.Join(n.Segments(c.URL), "\x00"); got != want {
			t.Fatalf("segments %q, want %q", c.Segments, n.Segments(c.URL))
		}
		a.Added(c)
	})
}

// BenchmarkAdmissionLink measures Admission.Link per link, the work done for
// every link of every fetched page: resolution and normalization of the
// reference, reading the scheme and host of the result, scope, Allow/Deny,
// segments and the trap limits (defaults on). The references are those of
// a documentation page: relative, root-relative, absolute, fragments and
// off-scope links, 4,096 of them, cycled.
//
//	go test -run '^$' -bench BenchmarkAdmissionLink -benchmem ./frontier/
func BenchmarkAdmissionLink(b *testing.B) {
	n, err := urlnorm.New(urlnorm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAdmission(n, nil, AdmissionOptions{Scope: ScopeHost})
	if err != nil {
		b.Fatal(err)
	}
	sd, err := a.ParseSeed("https://docs.example.org/")
	if err != nil {
		b.Fatal(err)
	}
	a.AddScope([]string{sd.Host}, []string{sd.Domain})
	parent := Entry{URL: "https://docs.example.org/guide/topics/intro.html", Depth: 1}
	forms := []string{
		"../api/module-%d.html", "section-%d.html#usage", "/static/css/site.css?v=%d",
		"https://docs.example.org/guide/chapter-%d/", "https://other.example.com/blog/%d",
		"#heading-%d", "./howto/Page%%20%d.html", "//docs.example.org/search?q=term%d&page=2",
	}
	refs := make([]string, 4096)
	for i := range refs {
		refs[i] = fmt.Sprintf(forms[i%len(forms)], i)
	}
	admitted := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, r := a.Link(parent, "", refs[i%len(refs)]); r == Admitted {
			admitted++
		}
	}
	if admitted == 0 {
		b.Fatal("no link admitted")
	}
}
