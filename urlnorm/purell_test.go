package urlnorm

import (
	"net/url"
	"testing"

	"github.com/PuerkitoBio/purell"
)

// TestPurellBugs keeps one case per known purell v1.2.1 bug. Each
// calls purell to show the bug is real (its output is wrong as stated) and
// checks that this package gives the correct result.
func TestPurellBugs(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		flags      purell.NormalizationFlags
		purellGets string // purell's wrong output, as measured
		want       string // the correct canonical form
		opts       Options
	}{
		{
			name: "FlagsSafe decodes %2F, turning one segment into two",
			in:   "http://h/a%2Fb", flags: purell.FlagsSafe,
			purellGets: "http://h/a/b", want: "http://h/a%2Fb",
		},
		{
			name: "FlagsSafe never normalizes the query",
			in:   "http://h/?a=%7e&b=%41", flags: purell.FlagsSafe,
			purellGets: "http://h/?a=%7e&b=%41", want: "http://h/?a=~&b=A",
		},
		{
			name: "FlagSortQuery drops unparsable pairs and turns c into c=",
			in:   "http://h/?b=2&a=%zz&c", flags: purell.FlagsSafe | purell.FlagSortQuery,
			purellGets: "http://h/?b=2&c=", want: "http://h/?a=%25zz&b=2&c",
			opts: Options{SortQuery: true},
		},
		{
			name: "FlagSortQuery re-encodes values and reorders repeated keys",
			in:   "http://h/?b=2&a=x+y&a=%20", flags: purell.FlagsSafe | purell.FlagSortQuery,
			purellGets: "http://h/?a=+&a=x+y&b=2", want: "http://h/?a=x+y&a=%20&b=2",
			opts: Options{SortQuery: true},
		},
		{
			name: "http://host gets no /",
			in:   "http://host", flags: purell.FlagsSafe,
			purellGets: "http://host", want: "http://host/",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := purell.NormalizeURLString(tt.in, tt.flags)
			if err != nil || p != tt.purellGets {
				t.Errorf("purell.NormalizeURLString(%q) = %q, %v; the bug expected %q (fixed upstream? update this test)", tt.in, p, err, tt.purellGets)
			}
			if p == tt.want {
				t.Errorf("purell's output %q is the correct one: this case shows no bug", p)
			}
			got, err := mustNew(t, tt.opts).Normalize(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	t.Run("NormalizeURL skips IDN conversion", func(t *testing.T) {
		const in, want = "http://MÜNCHEN.de/", "http://xn--mnchen-3ya.de/"
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if p := purell.NormalizeURL(u, purell.FlagsSafe); p != "http://münchen.de/" {
			t.Errorf("purell.NormalizeURL(%q) = %q; the bug expected the Unicode host kept", in, p)
		}
		if got, err := mustNew(t, Options{}).Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	})
}
