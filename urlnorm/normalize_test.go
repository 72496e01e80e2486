package urlnorm

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func mustNew(t testing.TB, o Options) *Normalizer {
	t.Helper()
	n, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNormalizeTricky is the table of hard cases of the safe policy. Each
// case either has want or wantErr.
func TestNormalizeTricky(t *testing.T) {
	long := "http://h/" + strings.Repeat("a", 65535-len("http://h/"))
	tests := []struct {
		name, in, want string
		wantErr        error
	}{
		// Scheme and whole-input clean-up.
		{"scheme and host case", "HTTPS://Example.COM/A/B", "https://example.com/A/B", nil},
		{"surrounding whitespace, inner tab and newline", "  http://h/a\tb\nc \r\n", "http://h/abc", nil},
		{"backslashes are slashes", `http:\\h\a\b`, "http://h/a/b", nil},
		{"any number of slashes", "http://///h/a", "http://h/a", nil},
		{"no slashes", "http:h/a", "http://h/a", nil},
		{"mailto", "mailto:a@example.com", "", ErrUnsupportedScheme},
		{"javascript", "javascript:void(0)", "", ErrUnsupportedScheme},
		{"data", "data:text/plain,hi", "", ErrUnsupportedScheme},
		{"ftp", "ftp://h/f", "", ErrUnsupportedScheme},
		{"relative without base", "example.com/a", "", ErrMissingScheme},
		{"empty", "", "", ErrEmpty},
		{"only spaces", " \t ", "", ErrEmpty},
		{"no host", "http://", "", ErrMissingHost},
		{"empty path gets slash", "http://h", "http://h/", nil},

		// IDN.
		{"IDN to punycode", "http://Bücher.example/", "http://xn--bcher-kva.example/", nil},
		{"IDN already punycode", "http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/", nil},
		{"IDN percent-encoded", "http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/", nil},
		{"IDN Japanese", "http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/", nil},
		{"ideographic full stop", "http://example\u3002com/", "http://example.com/", nil},
		{"capital sharp s is not ss", "http://\u1e9e.de/", "http://xn--zca.de/", nil},
		{"IDN invalid", "http://xn--a.\u00df/", "", ErrInvalidIDN},
		{"host invalid UTF-8", "http://\xff.com/", "", ErrInvalidHost},
		{"host escape of invalid UTF-8", "http://%ff.com/", "", ErrInvalidHost},
		{"host forbidden character", "http://a<b/", "", ErrInvalidHost},
		{"host escaped space", "http://a%20b/", "", ErrInvalidHost},
		{"trailing host dot", "http://example.com./", "http://example.com/", nil},
		{"two trailing dots kept", "http://example.com../", "http://example.com../", nil},
		{"underscore and hyphens allowed", "http://r3---sn_x.example/", "http://r3---sn_x.example/", nil},

		// IP addresses.
		{"IPv4 hex and short", "http://0x7f.1/", "http://127.0.0.1/", nil},
		{"IPv4 decimal number", "http://2130706433/", "http://127.0.0.1/", nil},
		{"IPv4 octal", "http://0177.0.0.01/", "http://127.0.0.1/", nil},
		{"IPv4 trailing dot", "http://1.2.3.4./", "http://1.2.3.4/", nil},
		{"IPv4 part too big", "http://256.0.0.1/", "", ErrInvalidIPv4},
		{"IPv4 five parts", "http://1.2.3.4.5/", "", ErrInvalidIPv4},
		{"IPv4 bad octal", "http://1.2.3.09/", "", ErrInvalidIPv4},
		{"IPv6 compressed and lowercased", "http://[2001:DB8:0:0:0:0:0:1]/", "http://[2001:db8::1]/", nil},
		{"IPv6 longest zero run", "http://[1:0:0:2:0:0:0:3]/", "http://[1:0:0:2::3]/", nil},
		{"IPv6 embedded IPv4", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", nil},
		{"IPv6 default port", "http://[::1]:80/", "http://[::1]/", nil},
		{"IPv6 other port", "http://[::1]:8080/a", "http://[::1]:8080/a", nil},
		{"IPv6 zone rejected", "http://[::1%25eth0]/", "", ErrInvalidIPv6},
		{"IPv6 unterminated", "http://[::1/", "", ErrInvalidIPv6},
		{"IPv6 nine pieces", "http://[1:2:3:4:5:6:7:8:9]/", "", ErrInvalidIPv6},
		{"IPv6 two compressions", "http://[1::2::3]/", "", ErrInvalidIPv6},

		// Userinfo.
		{"userinfo kept, host lowercased", "http://User:Pa ss@Host/", "http://User:Pa%20ss@host/", nil},
		{"last @ separates host", "http://a@b@c/", "http://a%40b@c/", nil},
		{"empty userinfo dropped", "http://:@h/", "http://h/", nil},
		{"credentials without host", "http://user@/", "", ErrMissingHost},
		{"password only", "http://:pw@h/", "http://:pw@h/", nil},

		// Ports.
		{"http default port", "http://h:80/", "http://h/", nil},
		{"https default port", "https://h:443/", "https://h/", nil},
		{"443 is not http's default", "http://h:443/", "http://h:443/", nil},
		{"80 is not https's default", "https://h:80/", "https://h:80/", nil},
		{"empty port", "http://h:/", "http://h/", nil},
		{"leading zeros in port", "http://h:0080/", "http://h/", nil},
		{"leading zeros in other port", "http://h:08080/", "http://h:8080/", nil},
		{"port too large", "http://h:65536/", "", ErrInvalidPort},
		{"port not a number", "http://h:8a/", "", ErrInvalidPort},
		{"negative port", "http://h:-1/", "", ErrInvalidPort},

		// Percent-encoding.
		{"%2F stays encoded and uppercased", "http://h/a%2fb", "http://h/a%2Fb", nil},
		{"%2F segment removed as a whole by ..", "http://h/a%2Fb/../c", "http://h/c", nil},
		{"reserved escapes kept", "http://h/%3f%23%26%3d%2b?q=%26%3d%23", "http://h/%3F%23%26%3D%2B?q=%26%3D%23", nil},
		{"unreserved escapes decoded", "http://h/%7Euser/%41%2d%5F%2E?x=%7e", "http://h/~user/A-_.?x=~", nil},
		{"%25 is not decoded", "http://h/%2541", "http://h/%2541", nil},
		{"stray percent encoded", "http://h/100%?q=5%", "http://h/100%25?q=5%25", nil},
		{"stray percent with one hex digit", "http://h/a%2?b=%e", "http://h/a%252?b=%25e", nil},
		{"stray percent before a non-hex byte", "http://h/%zz?%g1", "http://h/%25zz?%25g1", nil},
		{"stray percent and %25 merge", "http://h/100%25", "http://h/100%25", nil},
		{"no escape built from a stray percent", "http://h/%4%31", "http://h/%2541", nil},
		{"no escape built after a bare percent", "http://h/%%41", "http://h/%25A", nil},
		{"stray percent in userinfo", "http://u%:p%zz@h/", "http://u%25:p%25zz@h/", nil},
		{"stray percent in a hash-bang", "http://h/#!50%", "http://h/#!50%25", nil},

		// RFC 3986 grammar of each component: what it does not
		// allow is encoded, so the spellings browsers send raw merge with
		// the encoded ones; reserved characters it allows stay as they are.
		{"pipe in query", "http://h/?q=a|b", "http://h/?q=a%7Cb", nil},
		{"pipe in query already encoded", "http://h/?q=a%7cb", "http://h/?q=a%7Cb", nil},
		{"brackets in query", "http://h/?a[]=1&b[x]=2", "http://h/?a%5B%5D=1&b%5Bx%5D=2", nil},
		{"query characters outside RFC 3986", "http://h/?^`{}|\\", "http://h/?%5E%60%7B%7D%7C%5C", nil},
		{"brackets and pipe in path", "http://h/a[1]|b", "http://h/a%5B1%5D%7Cb", nil},
		{"path characters WHATWG encodes", "http://h/^`{}", "http://h/%5E%60%7B%7D", nil},
		{"reserved characters kept in path", "http://h/:@!$&'()*+,;=", "http://h/:@!$&'()*+,;=", nil},
		{"reserved characters kept in query", "http://h/?/?:@!$&()*+,;=", "http://h/?/?:@!$&()*+,;=", nil},
		{"reserved escapes not decoded", "http://h/%5b%5d%7c%40%3a?%5B%5D%7C%2F%3F", "http://h/%5B%5D%7C%40%3A?%5B%5D%7C%2F%3F", nil},
		{"hash-bang in RFC 3986 form", "http://h/#!a|b#c[d]", "http://h/#!a%7Cb%23c%5Bd%5D", nil},
		{"plus in query kept", "http://h/?q=a+b&r=a%2Bb", "http://h/?q=a+b&r=a%2Bb", nil},
		{"plus in path kept", "http://h/a+b", "http://h/a+b", nil},
		{"spaces encoded", "http://h/a b?c d", "http://h/a%20b?c%20d", nil},
		{"quote in query encoded", "http://h/?a='\"<>", "http://h/?a=%27%22%3C%3E", nil},
		{"non-ASCII as UTF-8", "http://h/ü?ä", "http://h/%C3%BC?%C3%A4", nil},
		{"invalid UTF-8 byte by byte", "http://h/\xff\xfe?q=\xc3", "http://h/%FF%FE?q=%C3", nil},
		{"controls encoded", "http://h/a\x01b", "http://h/a%01b", nil},
		{"path case kept", "http://h/Index.HTML", "http://h/Index.HTML", nil},

		// Dot segments.
		{"dot segments", "http://h/a/./b/../c", "http://h/a/c", nil},
		{"dot segments above root", "http://h/a/../../..", "http://h/", nil},
		{"encoded dot segments", "http://h/a/%2e%2E/b/%2e", "http://h/b/", nil},
		{"dots inside names kept", "http://h/a../.b/...", "http://h/a../.b/...", nil},

		// Query and fragment.
		{"fragment dropped", "http://h/a#top", "http://h/a", nil},
		{"hash-bang kept", "http://h/#!/page/1", "http://h/#!/page/1", nil},
		{"hash-bang encoded", "http://h/#!a b", "http://h/#!a%20b", nil},
		{"empty query dropped", "http://h/a?", "http://h/a", nil},
		{"empty query and fragment dropped", "http://h/a?#x", "http://h/a", nil},
		{"empty query before hash-bang", "http://h/?#!x", "http://h/#!x", nil},
		{"query order kept", "http://h/?b=1&a=2&b=0", "http://h/?b=1&a=2&b=0", nil},
		{"semicolons kept", "http://h/p;x=1?a=1;b=2", "http://h/p;x=1?a=1;b=2", nil},
		{"slashes in query kept", "http://h/?u=/a/../b", "http://h/?u=/a/../b", nil},

		{"65,535-byte URL", long, long, nil},
		{"65,535-byte URL with a bad port", "http://h:99999/" + long[len("http://h/"):], "", ErrInvalidPort},
		{"65,535-byte host", "http://" + strings.Repeat("\xff", 65535-len("http://")), "", ErrInvalidHost},
	}
	n := mustNew(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := n.Normalize(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Normalize(%q) = %q, %v; want error %v", tt.in, got, err, tt.wantErr)
				}
				var e *Error
				if !errors.As(err, &e) || e.Op != "parse" || e.URL != tt.in {
					t.Fatalf("Normalize(%q) error %#v; want *Error{Op: parse, URL: input}", tt.in, err)
				}
				if msg := err.Error(); !strings.HasPrefix(msg, "urlnorm: ") || strings.ContainsAny(msg, "\t\n") || len(msg) > 1000 {
					t.Fatalf("error message %q: want one short line prefixed with urlnorm:", msg)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			if again, err := n.Normalize(got); err != nil || again != got {
				t.Fatalf("Normalize(%q) = %q, %v; not idempotent", got, again, err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		base, ref, want string
		wantErr         error
		op              string
	}{
		{"http://h/a/b?q#f", "c", "http://h/a/c", nil, ""},
		{"http://h/a/b", "", "http://h/a/b", nil, ""},
		{"http://h/a/b?q", "#frag", "http://h/a/b?q", nil, ""},
		{"http://h/a/b", "#!x", "http://h/a/b#!x", nil, ""},
		{"http://h/a/b", "?x", "http://h/a/b?x", nil, ""},
		{"http://h/a/b", "//other/x", "http://other/x", nil, ""},
		{"https://h/a/b", "//other/x", "https://other/x", nil, ""},
		{"http://h/a/b", `\\other\x`, "http://other/x", nil, ""},
		{"http://h/a/b", "/x/../y", "http://h/y", nil, ""},
		{"http://u:p@h:81/a/b", "c", "http://u:p@h:81/a/c", nil, ""},
		{"http://h/a/b", "http:c", "http://h/a/c", nil, ""},
		{"http://h/a/b", "https:c", "https://c/", nil, ""},
		{"http://h/a/b", "  c d\n", "http://h/a/c%20d", nil, ""},
		{"http://h/a/", "mailto:x@y", "", ErrUnsupportedScheme, "resolve"},
		{"http://h/a/", "javascript:void(0)", "", ErrUnsupportedScheme, "resolve"},
		{"http://h/a/", "http://[x]/", "", ErrInvalidIPv6, "resolve"},
		{"/relative/base", "c", "", ErrMissingScheme, "parse base"},
		{"mailto:x@y", "c", "", ErrUnsupportedScheme, "parse base"},
	}
	n := mustNew(t, Options{})
	for _, tt := range tests {
		got, err := n.Resolve(tt.base, tt.ref)
		b, berr := n.ParseBase(tt.base)
		var got2 string
		var err2 error
		if berr == nil {
			got2, err2 = b.Resolve(tt.ref)
		} else {
			err2 = berr
		}
		if tt.wantErr != nil {
			var e *Error
			if !errors.Is(err, tt.wantErr) || !errors.As(err, &e) || e.Op != tt.op {
				t.Errorf("Resolve(%q, %q) = %q, %v; want %v with Op %q", tt.base, tt.ref, got, err, tt.wantErr, tt.op)
			}
			if !errors.Is(err2, tt.wantErr) {
				t.Errorf("ParseBase(%q).Resolve(%q) = %q, %v; want %v", tt.base, tt.ref, got2, err2, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tt.base, tt.ref, got, err, tt.want)
		}
		if err2 != nil || got2 != tt.want {
			t.Errorf("ParseBase(%q).Resolve(%q) = %q, %v; want %q", tt.base, tt.ref, got2, err2, tt.want)
		}
	}
}

func TestOptionalNormalizations(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		in      string
		want    string
		wantOff string // with Options{}: the option must be what changed it
	}{
		{"sort query", Options{SortQuery: true}, "http://h/?b=2&a=1&a=0&c", "http://h/?a=1&a=0&b=2&c", ""},
		{"sort keeps a distinct from a=", Options{SortQuery: true}, "http://h/?a=&b&a", "http://h/?a=&a&b", ""},
		{"sort keeps ; and values as they are", Options{SortQuery: true}, "http://h/?z=1;y=2&x=%7c&w=a+b", "http://h/?w=a+b&x=%7C&z=1;y=2", "http://h/?z=1;y=2&x=%7C&w=a+b"},
		{"sort drops empty pairs", Options{SortQuery: true}, "http://h/?b&&a&", "http://h/?a&b", ""},
		{"sort of nothing", Options{SortQuery: true}, "http://h/?&", "http://h/", "http://h/?&"},
		{"session params in query", Options{RemoveSessionParams: true}, "http://h/?id=1&PHPSESSID=x&utm_source=y&sid=2&b=3", "http://h/?id=1&b=3", ""},
		{"session params only", Options{RemoveSessionParams: true}, "http://h/p?jsessionid=1", "http://h/p", ""},
		{"session path parameter", Options{RemoveSessionParams: true}, "http://h/p;jsessionid=ABC?x=1", "http://h/p?x=1", ""},
		{"session path parameter leaving a dot", Options{RemoveSessionParams: true}, "http://h/a/.;jsessionid=1/b", "http://h/a/.;jsessionid=1/b", ""},
		{"custom session params", Options{RemoveSessionParams: true, SessionParams: []string{"token*"}}, "http://h/?tokenA=1&sid=2", "http://h/?sid=2", ""},
		{"collapse slashes", Options{CollapseSlashes: true}, "http://h//a///b//", "http://h/a/b/", ""},
		{"add trailing slash", Options{TrailingSlash: AddTrailingSlash}, "http://h/a/b?x", "http://h/a/b/?x", ""},
		{"add trailing slash not to files", Options{TrailingSlash: AddTrailingSlash}, "http://h/a/b.html", "http://h/a/b.html", ""},
		{"remove trailing slashes", Options{TrailingSlash: RemoveTrailingSlash}, "http://h/a/b//?x", "http://h/a/b?x", ""},
		{"remove trailing slash keeps root", Options{TrailingSlash: RemoveTrailingSlash}, "http://h/", "http://h/", ""},
		{"default page", Options{RemoveDefaultPages: true}, "http://h/a/Index.HTML?x", "http://h/a/?x", ""},
		{"default page only last", Options{RemoveDefaultPages: true}, "http://h/index.html/b", "http://h/index.html/b", ""},
		{"default pages and trailing slash", Options{RemoveDefaultPages: true, TrailingSlash: RemoveTrailingSlash}, "http://h/a/index.html/index.php", "http://h/a", ""},
		{"fold www", Options{FoldWWW: true}, "http://www.example.co.uk/", "http://example.co.uk/", ""},
		{"no fold onto a public suffix", Options{FoldWWW: true}, "http://www.co.uk/", "http://www.co.uk/", ""},
		{"no fold of www2", Options{FoldWWW: true}, "http://www2.example.com/", "http://www2.example.com/", ""},
		{"mapped IPv4", Options{DecodeNumericHosts: true}, "http://[::ffff:7f00:1]:8080/", "http://127.0.0.1:8080/", "http://[::ffff:7f00:1]:8080/"},
		{"other IPv6 kept", Options{DecodeNumericHosts: true}, "http://[::1]/", "http://[::1]/", ""},
	}
	off := mustNew(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := mustNew(t, tt.opts)
			got, err := n.Normalize(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			if again, err := n.Normalize(got); err != nil || again != got {
				t.Fatalf("Normalize(%q) = %q, %v; not idempotent", got, again, err)
			}
			wantOff := tt.wantOff
			if wantOff == "" {
				wantOff = tt.in
			}
			if got, err := off.Normalize(tt.in); err != nil || got != wantOff {
				t.Fatalf("without options: Normalize(%q) = %q, %v; want %q", tt.in, got, err, wantOff)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{TrailingSlash: 7},
		{RemoveSessionParams: true, SessionParams: []string{""}},
		{SessionParams: []string{"a=b"}},
		{SessionParams: []string{"*"}},
	} {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) || !strings.HasPrefix(err.Error(), "urlnorm: invalid options: ") {
			t.Errorf("(%+v).Validate() = %v; want an error wrapping ErrInvalidOptions", o, err)
		}
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New(%+v): got %v; want an error wrapping ErrInvalidOptions", o, err)
		}
	}
	// The zero value's default session list is valid and filled in.
	var o Options
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || !slices.Equal(o.SessionParams, DefaultSessionParams()) {
		t.Errorf("EnsureDefaults on the zero value: SessionParams %q, Validate %v; want the defaults, valid", o.SessionParams, err)
	}
	// New copies the options: changing the caller's slice changes nothing.
	params := []string{"token"}
	n := mustNew(t, Options{RemoveSessionParams: true, SessionParams: params})
	params[0] = "other"
	if got, _ := n.Normalize("http://h/?token=1&other=2"); got != "http://h/?other=2" {
		t.Errorf("got %q after changing the caller's slice; want http://h/?other=2", got)
	}
}

func TestSegments(t *testing.T) {
	tests := []struct {
		in     string
		ignore bool
		want   []string
	}{
		{"http://h/", false, []string{"http://h", ""}},
		{"https://h/", false, []string{"https://h", ""}},
		{"https://h/", true, []string{"h", ""}},
		{"http://u@h:8080/a/b", false, []string{"http://u@h:8080", "a", "b"}},
		{"http://h/a/b/", false, []string{"http://h", "a", "b", ""}},
		{"http://h/a/b?x=/y/z", false, []string{"http://h", "a", "b?x=/y/z"}},
		{"http://h/a/?x", false, []string{"http://h", "a", "?x"}},
		{"http://h/a#!/b/c", false, []string{"http://h", "a#!/b/c"}},
		{"http://h//a", false, []string{"http://h", "", "a"}},
		{"http://h", false, []string{"http://h"}},
		{"", false, []string{""}},
	}
	for _, tt := range tests {
		n := mustNew(t, Options{IgnoreScheme: tt.ignore})
		got := n.Segments(tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Segments(%q) (IgnoreScheme %v) = %q; want %q", tt.in, tt.ignore, got, tt.want)
		}
	}
}

// TestSegmentsNeverMerge checks that URLs naming different pages (that
// the safe policy keeps apart) never get equal segments.
func TestSegmentsNeverMerge(t *testing.T) {
	urls := []string{
		"http://h/", "https://h/", "http://h:443/", "https://h:80/", "http://u@h/",
		"http://h/a", "http://h/a/", "http://h/a?b", "http://h/a/?b", "http://h/a%2Fb",
		"http://h/a/b", "http://h/a?b/c", "http://h/a/b?c", "http://h/?a", "http://h//a",
		"http://h/a#!b", "http://h/a?#!b", "http://h/A", "http://h/a?x=1&y=2", "http://h/a?y=2&x=1",
		"http://h.example/", "http://h/.example/", "http://h/a+b", "http://h/a%20b",
	}
	n := mustNew(t, Options{})
	seen := map[string]string{}
	for _, u := range urls {
		c, err := n.Normalize(u)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.Join(n.Segments(c), "\x00")
		if prev, ok := seen[key]; ok && prev != c {
			t.Errorf("%q and %q share segments %q", prev, c, n.Segments(c))
		}
		seen[key] = c
		if got := strings.Join(n.Segments(c), "/"); got != c {
			t.Errorf("joining Segments(%q) gives %q; want the input back", c, got)
		}
	}
	// IgnoreScheme merges exactly the http/https pair and nothing else.
	ig := mustNew(t, Options{IgnoreScheme: true})
	if a, b := ig.Segments("http://h/x"), ig.Segments("https://h/x"); !slices.Equal(a, b) {
		t.Errorf("IgnoreScheme: %q and %q differ", a, b)
	}
	if a, b := ig.Segments("http://h:443/x"), ig.Segments("https://h/x"); slices.Equal(a, b) {
		t.Errorf("IgnoreScheme: http on port 443 merged with https: %q", a)
	}
}

func TestRegistrableDomain(t *testing.T) {
	tests := []struct {
		host, want string
		wantErr    bool
	}{
		{"news.bbc.co.uk", "bbc.co.uk", false},
		{"www.example.com", "example.com", false},
		{"Example.COM.", "example.com", false},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", false},
		{"foo.blogspot.com", "foo.blogspot.com", false},
		{"127.0.0.1", "127.0.0.1", false},
		{"[::1]", "[::1]", false},
		{"co.uk", "", true},
		{"com", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := RegistrableDomain(tt.host)
		if tt.wantErr {
			if !errors.Is(err, ErrNoRegistrableDomain) {
				t.Errorf("RegistrableDomain(%q) = %q, %v; want ErrNoRegistrableDomain", tt.host, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("RegistrableDomain(%q) = %q, %v; want %q", tt.host, got, err, tt.want)
		}
	}
}

// TestNormalizeAllocs checks the allocation budget: nothing for an input
// that is already canonical, one string otherwise.
func TestNormalizeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector (sync.Pool drops items)")
	}
	n := mustNew(t, Options{})
	for _, tt := range []struct {
		in   string
		want float64
	}{
		{"http://example.com/a/b?c=d", 0},
		{"HTTP://Example.com/a/./b?c=%7e#x", 1},
	} {
		n.Normalize(tt.in) // warm the pool
		got := testing.AllocsPerRun(200, func() { n.Normalize(tt.in) })
		if got > tt.want {
			t.Errorf("Normalize(%q): %v allocations per call; want at most %v", tt.in, got, tt.want)
		}
	}
}

// TestConcurrentUse runs one Normalizer and one Base from many goroutines;
// with -race it checks the documented concurrency safety.
func TestConcurrentUse(t *testing.T) {
	n := mustNew(t, Options{SortQuery: true, RemoveSessionParams: true})
	b, err := n.ParseBase("http://h/a/b")
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{"http://H/%7e?b=1&a=2", "HTTP://h/x/../y#z", "http://[::1]:80/", "http://h/" + strings.Repeat("q", 9000)}
	want := make([]string, len(inputs))
	for i, in := range inputs {
		want[i], _ = n.Normalize(in)
	}
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				k := (i + g) % len(inputs)
				if got, err := n.Normalize(inputs[k]); err != nil || got != want[k] {
					t.Errorf("Normalize(%q) = %q, %v; want %q", inputs[k], got, err, want[k])
					return
				}
				if got, err := b.Resolve("../c?x"); err != nil || got != "http://h/c?x" {
					t.Errorf("Resolve = %q, %v", got, err)
					return
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}

func TestOptionsAccessors(t *testing.T) {
	in := Options{RemoveSessionParams: true, SessionParams: []string{"a"}, TrailingSlash: AddTrailingSlash}
	n := mustNew(t, in)
	got := n.Options()
	got.SessionParams[0] = "changed"
	if again := n.Options(); !slices.Equal(again.SessionParams, []string{"a"}) || again.TrailingSlash != AddTrailingSlash || !again.RemoveSessionParams {
		t.Errorf("Options() = %+v; want a copy of %+v", again, in)
	}
	for ts, want := range map[TrailingSlash]string{KeepTrailingSlash: "keep", AddTrailingSlash: "add", RemoveTrailingSlash: "remove", 9: "TrailingSlash(9)"} {
		if got := ts.String(); got != want {
			t.Errorf("TrailingSlash(%d).String() = %q; want %q", uint8(ts), got, want)
		}
	}
}

func TestSplitCanonical(t *testing.T) {
	tests := []struct {
		in                     string
		scheme, host, hostname string // all "" when not ok
	}{
		{"http://h/", "http", "h", "h"},
		{"https://example.com:8443/a?b#!c", "https", "example.com:8443", "example.com"},
		{"http://u:p@h:81/x@y", "http", "h:81", "h"},
		{"http://a%40b@c/", "http", "c", "c"},
		{"http://127.0.0.1:8080/", "http", "127.0.0.1:8080", "127.0.0.1"},
		{"http://[::1]/", "http", "[::1]", "::1"},
		{"https://[2001:db8::1]:8080/x", "https", "[2001:db8::1]:8080", "2001:db8::1"},
		{"http://u@[::ffff:7f00:1]:81/", "http", "[::ffff:7f00:1]:81", "::ffff:7f00:1"},
		{"http://h", "http", "h", "h"},
		{"http://h?q", "http", "h", "h"},
		{"http://h#!x", "http", "h", "h"},
		{"http://xn--bcher-kva.example/", "http", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"http://!$&'()*+,;=_~\"/", "http", "!$&'()*+,;=_~\"", "!$&'()*+,;=_~\""},

		{"", "", "", ""},
		{"ftp://h/", "", "", ""},
		{"HTTP://h/", "", "", ""}, // not canonical
		{"http:/h/", "", "", ""},
		{"http:///x", "", "", ""},
		{"http://u@/x", "", "", ""},
		{"http://:80/", "", "", ""},
		{"http://h:/", "", "", ""},
		{"http://h:8a/", "", "", ""},
		{"http://a:b:80/", "", "", ""},
		{"http://[::1/", "", "", ""},
		{"http://[::1]x/", "", "", ""},
		{"http://[::1]:/", "", "", ""},
		{"http://[1.2.3.4]/", "", "", ""},
		{"http://[1:::2]/", "", "", ""},
		{"http://[fe80::1%25en0]/", "", "", ""},
		{"http://a[b/", "", "", ""},
		{"http://a b/", "", "", ""},
		{"http://a%41/", "", "", ""},
		{"http://a{b}/", "", "", ""}, // WHATWG accepts it, net/url does not
		{"http://a`b/", "", "", ""},
		{"http://\xc3\xbc/", "", "", ""},
	}
	for _, tt := range tests {
		scheme, host, hostname, ok := SplitCanonical(tt.in)
		if wantOK := tt.scheme != ""; ok != wantOK || scheme != tt.scheme || host != tt.host || hostname != tt.hostname {
			t.Errorf("SplitCanonical(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.in, scheme, host, hostname, ok, tt.scheme, tt.host, tt.hostname, wantOK)
		}
	}
	// The WHATWG case: Normalize accepts the host, net/url does not.
	n := mustNew(t, Options{})
	if c, err := n.Normalize("http://A{B}/"); err != nil || c != "http://a{b}/" {
		t.Errorf("Normalize(http://A{B}/) = %q, %v; want http://a{b}/", c, err)
	}
	if got := testing.AllocsPerRun(100, func() {
		SplitCanonical("https://u@example.com:8443/a?b")
		SplitCanonical("http://[2001:db8::1]:8080/")
	}); got != 0 {
		t.Errorf("SplitCanonical allocates %v times per call; want 0", got)
	}
}
