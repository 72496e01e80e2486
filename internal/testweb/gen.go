package testweb

import (
	"math"
	"strconv"
	"strings"
)

// Shape of the generated content. They are constants, not options: the
// Options choose the size and the features, these keep every host within
// the crawler's default limits (see MaxHostPages).
const (
	dirSize        = 100    // pages per directory /d<k>/
	calendarMonths = 120    // months of the calendar trap, from 2000-01
	shopItems      = 40     // items of the session-id trap
	sessions       = 8      // distinct session ids of the session-id trap
	trapDepth      = 30     // pages of each path trap (loop, grow, long)
	longStep       = 100    // bytes each page of the ever-longer trap adds
	pressReleases  = 12     // near-duplicate press releases per host
	hiddenPages    = 2      // sitemap-only pages per host
	images         = 16     // images per host
	cdnVersions    = 5      // versions of the CDN's script
	sitemapChunk   = 20_000 // entries per child sitemap
	sitemapCutURLs = 10     // entries of host 0's oversized sitemap past the limit
	// SitemapLimit is the sitemaps.org cap of URLs per sitemap file.
	SitemapLimit = 50_000
)

// cdnHost is the host index of the CDN.
const cdnHost = -1

// kind is what a URL of the web is.
type kind uint8

const (
	kNone         kind = iota
	kRoot              // "/"
	kDir               // a: directory
	kPage              // a: page
	kOld               // a: page it redirects to
	kGone              // a: id; 404
	kFile              // a: id; a PDF
	kPrivate           // a: id; disallowed by robots.txt
	kNofollow          // a: id; only linked rel=nofollow
	kCalendar          // a: month
	kShop              // a: item, b: session (-1: none)
	kLoop              // a: depth >= 1: /loop/a/a/.../
	kGrow              // a: depth >= 1: /grow/s1/s2/.../
	kLong              // a: step >= 1: /long/xxx...
	kPress             // a: release
	kHidden            // a: id; only in a sitemap
	kSitemapIndex      // robots.txt's Sitemap
	kSitemap           // a: chunk
	kSitemapBig        // host 0's oversized sitemap
	kSitemapCut        // a: id; listed past the limit
	kAsset             // a: asset
	kImage             // a: image, b: variant (0 png, 1 2x png, 2 webp)
	kRobots            // /robots.txt
)

// Assets of a web host (kAsset's a) and of the CDN.
const (
	assetSiteCSS = iota
	assetBaseCSS
	assetAppJS
	assetLogo
	assetBg
	assetFavicon
	assetHero
	numHostAssets

	cdnCSS  = 20
	cdnFont = 21
	cdnLib  = 30 // + version
)

// node is one URL of the web, before it is spelled.
type node struct {
	host int32 // cdnHost for the CDN
	kind kind
	a, b int32
}

// how says where a link sits and so how a crawler meets it.
type how uint8

const (
	hA          how = iota // <a href>: a link
	hNofollow              // <a href rel="nofollow">: not followed
	hOther                 // <a href> with a non-http scheme: no target
	hStylesheet            // <link rel="stylesheet" href>: an embed
	hIcon                  // <link rel="icon" href>: idem
	hScript                // <script src>
	hImg                   // <img src>; with srcset when the next link is hSrcset2x
	hSrcset2x              // the 2x candidate of the previous <img>'s srcset
	hSource                // <picture><source srcset>, followed by the fallback <img>
	hStyleAttr             // style="background-image:url(...)"
	hStyleElem             // url(...) in a <style> element
	hImport                // CSS @import
	hURL                   // CSS url()
	hRedirect              // the Location of a redirect
	hSitemap               // robots.txt Sitemap line, or an index's child
	hEntry                 // a sitemap's <loc>
)

// embed reports whether links of this kind are page requisites.
func (h how) embed() bool { return h >= hStylesheet && h <= hURL }

// link is one reference of a generated resource.
type link struct {
	how    how
	href   string // as written
	target node   // kind kNone: nothing to fetch
}

// rng is a splitmix64 stream: small, fast and the same everywhere, so that
// a page is generated identically by the server and by Expected.
type rng struct{ s uint64 }

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// intn returns a number in [0, n), n > 0.
func (r *rng) intn(n int) int { return int((r.next() >> 1) % uint64(n)) }

// float returns a number in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// chance reports true with probability 1/n.
func (r *rng) chance(n int) bool { return r.intn(n) == 0 }

// logUniform returns a rank in [0, n) with P(rank) about proportional to
// 1/(rank+1.5): Zipf's law with exponent 1, drawn without a table.
func (r *rng) logUniform(n int) int {
	v := int(math.Exp(r.float()*math.Log(float64(n)+1))) - 1
	return min(max(v, 0), n-1)
}

func (w *Web) rngFor(n node) rng {
	return rng{mix(w.opts.Seed ^ mix(uint64(uint32(n.host))<<32|uint64(n.kind)<<24) ^ mix(uint64(uint32(n.a))<<32|uint64(uint32(n.b))))}
}

// sessionID returns the text of session b; sessionIndex inverts it.
func (w *Web) sessionID(b int) string {
	v := uint32(b)*0x9e3779b1 ^ uint32(w.opts.Seed)
	s := strconv.FormatUint(uint64(v), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

func (w *Web) sessionIndex(s string) (int, bool) {
	if len(s) != 8 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || strings.ToLower(s) != s {
		return 0, false
	}
	// 0x9e3779b1 * 0x0e8b2f51 = 1 mod 2^32.
	b := (uint32(v) ^ uint32(w.opts.Seed)) * 0x0e8b2f51
	return int(b), b < sessions
}

// Properties of hosts.

func (w *Web) isTrapHost(h int) bool {
	if w.opts.TrapHosts <= 0 || h < 0 {
		return false
	}
	stride := max(1, w.opts.Hosts/w.opts.TrapHosts)
	return h%stride == 0 && h/stride < w.opts.TrapHosts
}

func (w *Web) isPressHost(h int) bool { return w.opts.NearDuplicates && h >= 0 && h%10 == 1 }

// pdfDenied reports whether host h's robots.txt disallows *.pdf.
func pdfDenied(h int) bool { return h%4 == 1 }

// denied reports whether robots.txt of host h disallows path.
func denied(h int, path string) bool {
	if h == cdnHost {
		return false
	}
	return strings.HasPrefix(path, "/private/") || (pdfDenied(h) && strings.HasSuffix(path, ".pdf"))
}

func (w *Web) dirs(h int) int { return (int(w.pages[h]) + dirSize - 1) / dirSize }

func (w *Web) sitemapChunks(h int) int {
	return (int(w.pages[h]) + hiddenPages + sitemapChunk - 1) / sitemapChunk
}

// path returns the path (and query) of n.
func (w *Web) path(n node) string {
	a := strconv.Itoa(int(n.a))
	switch n.kind {
	case kRoot:
		return "/"
	case kDir:
		return "/d" + a + "/"
	case kPage:
		return "/d" + strconv.Itoa(int(n.a)/dirSize) + "/p" + a + ".html"
	case kOld:
		return "/old/p" + a
	case kGone:
		return "/gone/" + a + ".html"
	case kFile:
		return "/files/r" + a + ".pdf"
	case kPrivate:
		return "/private/" + a + ".html"
	case kNofollow:
		return "/nofollow/" + a + ".html"
	case kCalendar:
		m := int(n.a)%12 + 1
		mm := strconv.Itoa(m)
		if m < 10 {
			mm = "0" + mm
		}
		return "/calendar/" + strconv.Itoa(2000+int(n.a)/12) + "/" + mm + "/"
	case kShop:
		p := "/shop/i" + a + ".html"
		if n.b >= 0 {
			p += "?sid=" + w.sessionID(int(n.b))
		}
		return p
	case kLoop:
		return "/loop/" + strings.Repeat("a/", int(n.a))
	case kGrow:
		var b strings.Builder
		b.WriteString("/grow/")
		for i := 1; i <= int(n.a); i++ {
			b.WriteString("s")
			b.WriteString(strconv.Itoa(i))
			b.WriteString("/")
		}
		return b.String()
	case kLong:
		return "/long/" + strings.Repeat("x", longStep*int(n.a))
	case kPress:
		return "/press/" + a + ".html"
	case kHidden:
		return "/hidden/" + a + ".html"
	case kSitemapIndex:
		return "/sitemap_index.xml"
	case kSitemap:
		if n.a == 0 {
			return "/sitemaps/pages-0.xml.gz"
		}
		return "/sitemaps/pages-" + a + ".xml"
	case kSitemapBig:
		return "/sitemaps/big.xml"
	case kSitemapCut:
		return "/sitemap-cut/" + a + ".html"
	case kImage:
		switch n.b {
		case 1:
			return "/img/i" + a + "@2x.png"
		case 2:
			return "/img/i" + a + ".webp"
		}
		return "/img/i" + a + ".png"
	case kRobots:
		return "/robots.txt"
	case kAsset:
		switch n.a {
		case assetSiteCSS:
			return "/static/site.css"
		case assetBaseCSS:
			return "/static/base.css"
		case assetAppJS:
			return "/static/app.js"
		case assetLogo:
			return "/static/logo.png"
		case assetBg:
			return "/static/img/bg.png"
		case assetFavicon:
			return "/favicon.ico"
		case assetHero:
			return "/static/img/hero.png"
		case cdnCSS:
			return "/css/cdn.css"
		case cdnFont:
			return "/fonts/f.woff2"
		}
		return "/lib/v" + strconv.Itoa(int(n.a)-cdnLib) + "/lib.js"
	}
	return ""
}

// exists reports whether host h serves n.
func (w *Web) exists(n node) bool {
	h := int(n.host)
	if h == cdnHost {
		if !w.opts.Embeds {
			return false
		}
		switch n.kind {
		case kRobots:
			return true
		case kAsset:
			return n.a == cdnCSS || n.a == cdnFont || (n.a >= cdnLib && n.a < cdnLib+cdnVersions)
		}
		return false
	}
	if h < 0 || h >= len(w.pages) {
		return false
	}
	pages := w.pages[h]
	switch n.kind {
	case kRoot, kRobots:
		return true
	case kDir:
		return n.a >= 0 && int(n.a) < w.dirs(h)
	case kPage, kOld, kGone, kFile, kPrivate, kNofollow:
		return n.a >= 0 && n.a < pages
	case kCalendar:
		return w.isTrapHost(h) && n.a >= 0 && n.a < calendarMonths
	case kShop:
		return w.isTrapHost(h) && n.a >= 0 && n.a < shopItems && n.b >= -1 && n.b < sessions
	case kLoop, kGrow, kLong:
		return w.isTrapHost(h) && n.a >= 1 && n.a <= trapDepth
	case kPress:
		return w.isPressHost(h) && n.a >= 0 && n.a < pressReleases
	case kHidden:
		return w.opts.Sitemaps && n.a >= 0 && n.a < hiddenPages
	case kSitemapIndex:
		return w.opts.Sitemaps
	case kSitemap:
		return w.opts.Sitemaps && n.a >= 0 && int(n.a) < w.sitemapChunks(h)
	case kSitemapBig:
		return w.opts.Sitemaps && h == 0
	case kSitemapCut:
		return w.opts.Sitemaps && h == 0 && n.a >= 0 && n.a < sitemapCutURLs
	case kImage:
		return w.opts.Embeds && n.a >= 0 && n.a < images && n.b >= 0 && n.b <= 2
	case kAsset:
		return w.opts.Embeds && n.a >= 0 && n.a < numHostAssets
	}
	return false
}

// leaf is a kind whose path is a prefix, a number and a suffix.
type leaf struct {
	prefix, suffix string
	kind           kind
}

// leafOf returns the leaf whose prefix path has, if any.
func leafOf(path string) *leaf {
	for i := range leaves {
		if strings.HasPrefix(path, leaves[i].prefix) {
			return &leaves[i]
		}
	}
	return nil
}

var leaves = []leaf{
	{"/old/p", "", kOld},
	{"/gone/", ".html", kGone},
	{"/files/r", ".pdf", kFile},
	{"/private/", ".html", kPrivate},
	{"/nofollow/", ".html", kNofollow},
	{"/press/", ".html", kPress},
	{"/hidden/", ".html", kHidden},
	{"/sitemap-cut/", ".html", kSitemapCut},
}

// route returns the node host h serves at path (decoded, as a server
// sees it) and rawQuery. Only the canonical spelling of a path is served:
// anything else is not found.
func (w *Web) route(h int, path, rawQuery string) (node, bool) {
	n := node{host: int32(h), b: -1}
	num := func(s string) (int32, bool) {
		// Digits only: strconv.Atoi would take a sign too. Leading zeros
		// pass here (months are written 01); the caller compares the
		// path it rebuilds with the one asked for.
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
		}
		v, err := strconv.Atoi(s)
		return int32(v), err == nil && v < 1<<30
	}
	cut := func(s, prefix, suffix string) (int32, bool) {
		if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) || len(s) < len(prefix)+len(suffix) {
			return 0, false
		}
		return num(s[len(prefix) : len(s)-len(suffix)])
	}
	var ok bool
	if l := leafOf(path); l != nil {
		n.kind = l.kind
		n.a, ok = cut(path, l.prefix, l.suffix)
	} else {
		switch {
		case path == "/":
			n.kind, ok = kRoot, true
		case path == "/robots.txt":
			n.kind, ok = kRobots, true
		case strings.HasPrefix(path, "/d"):
			if i := strings.Index(path, "/p"); i > 0 {
				n.kind = kPage
				n.a, ok = cut(path[i:], "/p", ".html")
			} else {
				n.kind = kDir
				n.a, ok = cut(path, "/d", "/")
			}
		case strings.HasPrefix(path, "/calendar/"):
			var y, m int32
			if parts := strings.Split(path, "/"); len(parts) == 5 {
				y, ok = num(parts[2])
				var ok2 bool
				m, ok2 = num(parts[3])
				ok = ok && ok2 && m >= 1 && m <= 12 && y >= 2000
			}
			n.kind, n.a = kCalendar, (y-2000)*12+m-1
		case strings.HasPrefix(path, "/shop/"):
			n.kind = kShop
			n.a, ok = cut(path, "/shop/i", ".html")
			if rawQuery != "" {
				s, found := strings.CutPrefix(rawQuery, "sid=")
				b, valid := w.sessionIndex(s)
				ok, n.b = ok && found && valid, int32(b)
			}
			rawQuery = ""
		case strings.HasPrefix(path, "/loop/"):
			n.kind, n.a, ok = kLoop, int32(strings.Count(path, "/")-2), true
		case strings.HasPrefix(path, "/grow/"):
			n.kind, n.a, ok = kGrow, int32(strings.Count(path, "/")-2), true
		case strings.HasPrefix(path, "/long/"):
			n.kind, n.a, ok = kLong, int32((len(path)-len("/long/"))/longStep), true
		case path == "/sitemap_index.xml":
			n.kind, ok = kSitemapIndex, true
		case path == "/sitemaps/big.xml":
			n.kind, ok = kSitemapBig, true
		case strings.HasPrefix(path, "/sitemaps/pages-"):
			n.kind = kSitemap
			if n.a, ok = cut(path, "/sitemaps/pages-", ".xml.gz"); !ok {
				n.a, ok = cut(path, "/sitemaps/pages-", ".xml")
			}
		case strings.HasPrefix(path, "/img/"):
			n.kind = kImage
			for b, suffix := range []string{".png", "@2x.png", ".webp"} {
				if a, found := cut(path, "/img/i", suffix); found {
					n.a, n.b, ok = a, int32(b), true
					break
				}
			}
		default:
			n.kind = kAsset
			for _, a := range []int32{assetSiteCSS, assetBaseCSS, assetAppJS, assetLogo, assetBg, assetFavicon, assetHero,
				cdnCSS, cdnFont, cdnLib, cdnLib + 1, cdnLib + 2, cdnLib + 3, cdnLib + 4} {
				n.a = a
				if w.path(n) == path {
					ok = true
					break
				}
			}
		}
	}
	if n.kind != kShop && n.kind != kImage {
		n.b = 0
	}
	if !ok || rawQuery != "" || !w.exists(n) || w.path(n) != path+queryOf(n, w) {
		return node{}, false
	}
	return n, true
}

// queryOf returns the "?query" part of n's path ("" for most nodes), so
// that route can compare a request's path with n's canonical one.
func queryOf(n node, w *Web) string {
	if n.kind == kShop && n.b >= 0 {
		return "?sid=" + w.sessionID(int(n.b))
	}
	return ""
}
