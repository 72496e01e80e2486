package testweb

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
)

// serve answers one request: the host from the Host header, the resource
// from the decoded path, everything generated on the fly.
func (w *Web) serve(rw http.ResponseWriter, r *http.Request) {
	w.requests.Add(1)
	if w.counts != nil {
		key := "http://" + strings.ToLower(r.Host) + r.URL.RequestURI()
		w.mu.Lock()
		w.counts[key]++
		w.mu.Unlock()
	}
	h := w.hostIndex(strings.ToLower(hostOnly(r.Host)))
	n, ok := node{}, false
	if h != noHost {
		n, ok = w.route(h, r.URL.Path, r.URL.RawQuery)
	}
	bp := w.bufs.Get().(*[]byte)
	b := (*bp)[:0]
	defer func() {
		if cap(b) <= 1<<20 { // do not keep an oversized sitemap's buffer
			*bp = b
			w.bufs.Put(bp)
		}
	}()
	status, ctype := http.StatusOK, "text/html; charset=utf-8"
	var ls []link
	if ok {
		ls = w.links(nil, n)
	}
	switch {
	case !ok || n.kind == kGone:
		status = http.StatusNotFound
		b = append(b, "<!doctype html>\n<title>Not found</title>\n<p>There is nothing here.</p>\n"...)
	case n.kind == kOld:
		rw.Header().Set("Location", ls[0].href)
		status = http.StatusMovedPermanently
		b = append(b, "<!doctype html>\n<title>Moved</title>\n<p>This page has moved.</p>\n"...)
	case n.kind == kRobots:
		ctype = "text/plain; charset=utf-8"
		b = w.robots(b, h, ls)
	case n.kind == kSitemapIndex:
		ctype = "application/xml"
		b = append(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"...)
		for _, l := range ls {
			b = append(b, "<sitemap><loc>"...)
			b = appendEscaped(b, l.href)
			b = append(b, "</loc></sitemap>\n"...)
		}
		b = append(b, "</sitemapindex>\n"...)
	case n.kind == kSitemap || n.kind == kSitemapBig:
		ctype = "application/xml"
		b = append(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"...)
		for i, l := range ls {
			b = append(b, "<url><loc>"...)
			b = appendEscaped(b, l.href)
			b = append(b, "</loc><lastmod>2024-01-"...)
			b = append2(b, i%28+1)
			b = append(b, "</lastmod></url>\n"...)
		}
		b = append(b, "</urlset>\n"...)
		if n.kind == kSitemap && n.a == 0 {
			ctype = "application/gzip"
			var z bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
			zw.Write(b)
			zw.Close()
			b = append(b[:0], z.Bytes()...)
		}
	case n.kind == kAsset || n.kind == kImage:
		ctype, b = w.asset(b, n, ls)
	case n.kind == kFile:
		ctype = "application/pdf"
		b = append(b, "%PDF-1.4\n% testweb: not a real document\n%%EOF\n"...)
	case n.kind == kPrivate || n.kind == kNofollow || n.kind == kSitemapCut:
		b = append(b, "<!doctype html>\n<title>Leaf</title>\n<p>A crawler that obeys the rules never fetches this page.</p>\n"...)
	default:
		b = w.html(b, n, ls)
	}
	hd := rw.Header()
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	rw.WriteHeader(status)
	if r.Method != http.MethodHead {
		rw.Write(b)
		w.bytes.Add(uint64(len(b)))
	}
}

// robots writes host h's robots.txt.
func (w *Web) robots(b []byte, h int, ls []link) []byte {
	b = append(b, "User-agent: *\n"...)
	if h == cdnHost {
		b = append(b, "Allow: /\n"...)
	} else {
		b = append(b, "Disallow: /private/\n"...)
		if pdfDenied(h) {
			b = append(b, "Disallow: /*.pdf$\n"...)
		}
	}
	for _, l := range ls {
		b = append(b, "Sitemap: "...)
		b = append(b, l.href...)
		b = append(b, '\n')
	}
	return b
}

// png1x1 is a valid 1x1 transparent PNG.
var png1x1 = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// asset writes a stylesheet, script, image, icon or font.
func (w *Web) asset(b []byte, n node, ls []link) (string, []byte) {
	if n.kind == kImage {
		if n.b == 2 {
			return "image/webp", append(b, "RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"...)
		}
		return "image/png", append(b, png1x1...)
	}
	switch n.a {
	case assetSiteCSS, cdnCSS, assetBaseCSS:
		for _, l := range ls {
			switch l.how {
			case hImport:
				b = append(b, "@import \""...)
				b = append(b, l.href...)
				b = append(b, "\";\n"...)
			case hURL:
				if n.a == cdnCSS {
					b = append(b, "@font-face { font-family: \"Body\"; src: url("...)
					b = append(b, l.href...)
					b = append(b, ") format(\"woff2\"); }\n"...)
				} else {
					b = append(b, "body { background: #fff url('"...)
					b = append(b, l.href...)
					b = append(b, "') repeat-x; }\n"...)
				}
			}
		}
		b = append(b, "h1 { font-size: 2em; margin: .67em 0; }\np { line-height: 1.5; }\n"...)
		return "text/css; charset=utf-8", b
	case assetAppJS:
		return "text/javascript", append(b, "document.documentElement.className = \"js\";\n"...)
	case assetFavicon:
		return "image/x-icon", append(b, png1x1...)
	case cdnFont:
		return "font/woff2", append(b, "wOF2\x00\x01\x00\x00"...)
	case assetLogo, assetBg, assetHero:
		return "image/png", append(b, png1x1...)
	}
	return "text/javascript", append(b, "/* testweb CDN library */\nwindow.lib = {};\n"...)
}

// html writes an HTML page: its head requisites, then text with its links
// and images spread through paragraphs, padded to a few KiB.
func (w *Web) html(b []byte, n node, ls []link) []byte {
	tr := w.rngFor(n)
	tr.s ^= saltText
	if n.kind == kPress {
		// Every release of a host has the same text: only the date and
		// the counter below differ.
		tr = w.rngFor(node{host: n.host, kind: kPress})
		tr.s ^= saltText
	}
	title := w.title(n)
	b = append(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"...)
	b = append(b, title...)
	b = append(b, "</title>\n"...)
	for _, l := range ls {
		switch l.how {
		case hStylesheet:
			b = tag(b, "<link rel=\"stylesheet\" href=\"", l.href, "\">\n")
		case hIcon:
			b = tag(b, "<link rel=\"icon\" href=\"", l.href, "\">\n")
		case hScript:
			b = tag(b, "<script src=\"", l.href, "\" defer></script>\n")
		case hStyleElem:
			// Raw text: no character references inside <style>.
			b = append(b, "<style>.hero { background-image: url(\""...)
			b = append(b, l.href...)
			b = append(b, "\"); }</style>\n"...)
		}
	}
	b = append(b, "</head>\n<body>\n<main>\n<h1>"...)
	b = append(b, title...)
	b = append(b, "</h1>\n<p>"...)
	inPara := 0
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		switch l.how {
		case hA, hNofollow, hOther:
			b = w.words(b, &tr, 3+tr.intn(10))
			b = tag(b, " <a href=\"", l.href, "\"")
			if l.how == hNofollow {
				b = append(b, " rel=\"nofollow\""...)
			}
			b = append(b, '>')
			b = w.words(b, &tr, 1+tr.intn(3))
			b = append(b, "</a>"...)
			if inPara++; inPara == 4 {
				b = append(b, ".</p>\n<p>"...)
				inPara = 0
			}
		case hImg:
			b = tag(b, "<img src=\"", l.href, "\"")
			if i+1 < len(ls) && ls[i+1].how == hSrcset2x {
				b = tag(b, " srcset=\"", l.href, " 1x, ")
				b = tag(b, "", ls[i+1].href, " 2x\"")
				i++
			}
			b = append(b, " alt=\"\"> "...)
		case hSource:
			b = tag(b, "<picture><source srcset=\"", l.href, "\" type=\"image/webp\">")
			if i+1 < len(ls) && ls[i+1].how == hImg {
				b = tag(b, "<img src=\"", ls[i+1].href, "\" alt=\"\">")
				i++
			}
			b = append(b, "</picture> "...)
		case hStyleAttr:
			b = tag(b, "<span class=\"banner\" style=\"background-image:url('", l.href, "')\"></span> ")
		}
	}
	if n.kind == kPress {
		b = append(b, ".</p>\n<p>Published 2024-03-"...)
		b = append2(b, int(n.a)%28+1)
		b = append(b, ". Visitor number "...)
		b = strconv.AppendUint(b, mix(w.opts.Seed^uint64(n.a)^uint64(n.host)<<20)%1_000_000, 10)
	}
	target := len(b) + 1500 + tr.intn(2500)
	for len(b) < target {
		b = append(b, ".</p>\n<p>"...)
		b = w.words(b, &tr, 20+tr.intn(40))
	}
	return append(b, ".</p>\n</main>\n<footer><p>Generated by testweb.</p></footer>\n</body></html>\n"...)
}

// title returns the page title of n.
func (w *Web) title(n node) string {
	switch n.kind {
	case kRoot:
		return "Home of " + w.authority(int(n.host))
	case kDir:
		return "Section " + strconv.Itoa(int(n.a))
	case kPage:
		return "Page " + strconv.Itoa(int(n.a))
	case kPress:
		return "Press release"
	case kCalendar:
		return "Calendar " + w.path(n)[len("/calendar/"):]
	case kShop:
		return "Item " + strconv.Itoa(int(n.a))
	case kHidden:
		return "Only in the sitemap"
	}
	return "Trap"
}

// tag appends pre, the escaped attribute value v, then post.
func tag(b []byte, pre, v, post string) []byte {
	b = append(b, pre...)
	b = appendEscaped(b, v)
	return append(b, post...)
}

// appendEscaped appends s escaped for an HTML attribute or XML text.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '"':
			b = append(b, "&quot;"...)
		case '\'':
			b = append(b, "&#39;"...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// append2 appends v (0 to 99) in two digits.
func append2(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

// vocabulary of the generated text.
var vocabulary = strings.Fields(`the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there one all we their has been would when who will more no if
out so said what up its about into than them can only other new some could time these two may then do first any
my now such like our over man me even most made after also did many before must through back years where much
your way well down should because each just those people how too little state good very make world still own see
men work long get here between both life being under never day same another know while last might us great old
year off come since against go came right used take three crawler page link site index archive filter layer
bloom frontier seed robots sitemap web server request response header body document section chapter note
report update release version library module package function method field value record entry table list`)

// textSize is the size of a web's text corpus, from which pages copy runs
// of words: one copy per run instead of one per word (a quarter of the
// generation cost before). Pages of a web share runs only by chance:
// 256 KiB of text against a few KiB per page.
const textSize = 256 << 10

// corpus returns textSize bytes of words drawn with seed, and the offset
// of every word.
func corpus(seed uint64) ([]byte, []int32) {
	r := rng{mix(seed ^ saltText)}
	text := make([]byte, 0, textSize+16)
	var starts []int32
	for len(text) < textSize {
		if len(text) > 0 {
			text = append(text, ' ')
		}
		starts = append(starts, int32(len(text)))
		text = append(text, vocabulary[r.intn(len(vocabulary))]...)
	}
	return text, starts
}

// words appends a run of n words of the web's text (n below 1000).
func (w *Web) words(b []byte, r *rng, n int) []byte {
	i := r.intn(len(w.starts) - n - 1)
	return append(b, w.text[w.starts[i]:w.starts[i+n]-1]...)
}
