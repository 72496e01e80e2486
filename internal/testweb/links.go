package testweb

import (
	"strconv"
	"strings"
)

// Salts of the random streams of one resource: what it links to
// (structure), how links are spelled, and its text, so that turning
// Duplicates off or on leaves the link graph as it is.
const (
	saltSpell = 0x7370656c6c
	saltText  = 0x74657874
)

// links returns, appended to dst, every reference of n in document order:
// the single source of what the server writes and what Expected follows.
func (w *Web) links(dst []link, n node) []link {
	r := w.rngFor(n)
	s := rng{r.s ^ saltSpell}
	// Press releases spell every link naturally: they differ only in
	// their date and counter.
	g := gen{w: w, from: n, r: &r, s: &s, dst: dst, plain: n.kind == kPress}
	h := int(n.host)
	switch n.kind {
	case kRoot:
		g.head()
		if w.opts.Embeds {
			g.embed(hStyleElem, node{host: n.host, kind: kAsset, a: assetHero})
			g.embed(hStylesheet, node{host: cdnHost, kind: kAsset, a: cdnCSS})
		}
		for k := range w.dirs(h) {
			g.a(node{host: n.host, kind: kDir, a: int32(k)})
		}
		for j := range min(int(w.pages[h]), 5) {
			g.a(w.page(h, j))
		}
		if w.opts.CrossLinks > 0 {
			for range 5 {
				if t := w.otherHost(&r, h); t >= 0 {
					g.a(node{host: int32(t), kind: kRoot})
				}
			}
		}
		if w.isTrapHost(h) {
			g.a(node{host: n.host, kind: kCalendar})
			for sid := range int32(3) { // three visits, three sessions
				g.a(node{host: n.host, kind: kShop, b: sid})
			}
			g.a(node{host: n.host, kind: kLoop, a: 1})
			g.a(node{host: n.host, kind: kGrow, a: 1})
			g.a(node{host: n.host, kind: kLong, a: 1})
		}
		if w.isPressHost(h) {
			g.a(node{host: n.host, kind: kPress})
		}
		g.leaf(kPrivate, 0, hA)
		g.other("mailto:webmaster@" + w.names[h])
	case kDir:
		g.head()
		g.a(node{host: n.host, kind: kRoot})
		for j := int(n.a) * dirSize; j < min(int(w.pages[h]), int(n.a+1)*dirSize); j++ {
			g.a(w.page(h, j))
		}
		if n.a > 0 {
			g.a(node{host: n.host, kind: kDir, a: n.a - 1})
		}
		if int(n.a)+1 < w.dirs(h) {
			g.a(node{host: n.host, kind: kDir, a: n.a + 1})
		}
	case kPage:
		g.pageLinks()
	case kCalendar:
		g.a(node{host: n.host, kind: kRoot})
		for _, d := range []int32{-1, 1, -12, 12} {
			if m := n.a + d; m >= 0 && m < calendarMonths {
				g.a(node{host: n.host, kind: kCalendar, a: m})
			}
		}
	case kShop:
		sid := n.b
		if sid < 0 {
			sid = n.a % sessions // a visit without a session gets one
		}
		g.a(node{host: n.host, kind: kRoot})
		for _, item := range []int32{(n.a + 1) % shopItems, (n.a + shopItems - 1) % shopItems, (n.a*7 + 3) % shopItems} {
			g.a(node{host: n.host, kind: kShop, a: item, b: sid})
		}
	case kLoop, kGrow, kLong:
		g.a(node{host: n.host, kind: kRoot})
		if n.a < trapDepth {
			g.a(node{host: n.host, kind: n.kind, a: n.a + 1})
		}
	case kPress:
		// Every release links to the same pages: the releases differ only
		// in their date and counter.
		g.head()
		g.a(node{host: n.host, kind: kRoot})
		for a := range int32(pressReleases) {
			g.a(node{host: n.host, kind: kPress, a: a})
		}
	case kHidden:
		g.head()
		g.a(node{host: n.host, kind: kRoot})
		g.a(node{host: n.host, kind: kDir})
	case kOld:
		g.add(hRedirect, w.path(w.page(h, int(n.a))), w.page(h, int(n.a)))
	case kRobots:
		if w.opts.Sitemaps && h != cdnHost {
			t := node{host: n.host, kind: kSitemapIndex}
			g.add(hSitemap, w.url(t), t)
		}
	case kSitemapIndex:
		for c := range w.sitemapChunks(h) {
			t := node{host: n.host, kind: kSitemap, a: int32(c)}
			g.add(hSitemap, w.url(t), t)
		}
		if h == 0 {
			t := node{host: n.host, kind: kSitemapBig}
			g.add(hSitemap, w.url(t), t)
		}
	case kSitemap:
		pages := int(w.pages[h])
		for j := int(n.a) * sitemapChunk; j < min(pages, int(n.a+1)*sitemapChunk); j++ {
			g.add(hEntry, w.url(w.page(h, j)), w.page(h, j))
		}
		if int(n.a) == w.sitemapChunks(h)-1 {
			for a := range int32(hiddenPages) {
				t := node{host: n.host, kind: kHidden, a: a}
				g.add(hEntry, w.url(t), t)
			}
		}
	case kSitemapBig:
		// SitemapLimit spellings (fragments) of pages that are linked
		// anyway, then URLs that only a crawler ignoring the limit fetches.
		pages := int(w.pages[h])
		for e := range SitemapLimit {
			t := w.page(h, e%pages)
			g.add(hEntry, w.url(t)+"#e"+strconv.Itoa(e), t)
		}
		for a := range int32(sitemapCutURLs) {
			t := node{host: n.host, kind: kSitemapCut, a: a}
			g.add(hEntry, w.url(t), t)
		}
	case kAsset:
		switch n.a {
		case assetSiteCSS:
			g.embed(hImport, node{host: n.host, kind: kAsset, a: assetBaseCSS})
			g.embed(hURL, node{host: n.host, kind: kAsset, a: assetBg})
		case cdnCSS:
			g.embed(hURL, node{host: n.host, kind: kAsset, a: cdnFont})
		}
	}
	return g.dst
}

// page returns the node of page j of host h.
func (w *Web) page(h, j int) node { return node{host: int32(h), kind: kPage, a: int32(j)} }

// otherHost returns a host other than h drawn by popularity (Zipf over a
// fixed random ranking of hosts), or -1 when there is none.
func (w *Web) otherHost(r *rng, h int) int {
	n := len(w.perm)
	if n < 2 {
		return -1
	}
	rank := r.logUniform(n)
	t := int(w.perm[rank])
	if t == h {
		t = int(w.perm[(rank+1)%n])
	}
	return t
}

// gen appends the links of one resource.
type gen struct {
	w     *Web
	from  node
	r, s  *rng // structure, spelling
	dst   []link
	plain bool // spell every link naturally
}

func (g *gen) add(h how, href string, t node) {
	g.dst = append(g.dst, link{how: h, href: href, target: t})
}

// a adds a followed link to t, spelled naturally or, with probability
// Duplicates, in another spelling.
func (g *gen) a(t node) { g.add(hA, g.spell(t), t) }

// leaf adds a link to the page of kind k numbered a.
func (g *gen) leaf(k kind, a int32, h how) {
	t := node{host: g.from.host, kind: k, a: a}
	g.add(h, g.spell(t), t)
}

// other adds a link no crawler follows (a non-http scheme).
func (g *gen) other(href string) { g.add(hOther, href, node{}) }

// embed adds a requisite.
func (g *gen) embed(h how, t node) { g.add(h, g.spell(t), t) }

// head adds the requisites every HTML page of a host has.
func (g *gen) head() {
	if !g.w.opts.Embeds {
		return
	}
	host := g.from.host
	g.embed(hStylesheet, node{host: host, kind: kAsset, a: assetSiteCSS})
	g.embed(hIcon, node{host: host, kind: kAsset, a: assetFavicon})
	g.embed(hScript, node{host: host, kind: kAsset, a: assetAppJS})
	g.embed(hScript, node{host: cdnHost, kind: kAsset, a: cdnLib + host%cdnVersions})
	g.embed(hImg, node{host: host, kind: kAsset, a: assetLogo})
}

// pageLinks adds the links of a content page: navigation, related pages
// of the host, links to other hosts, and now and then a redirect, a dead
// link, a file, a disallowed or nofollow link, a trap and images.
func (g *gen) pageLinks() {
	w, r, n := g.w, g.r, g.from
	h, j := int(n.host), int(n.a)
	pages := int(w.pages[h])
	g.head()
	g.a(node{host: n.host, kind: kRoot})
	g.a(node{host: n.host, kind: kDir, a: int32(j / dirSize)})
	if j%dirSize != 0 {
		g.a(w.page(h, j-1))
	}
	if j+1 < pages && (j+1)%dirSize != 0 {
		g.a(w.page(h, j+1))
	}
	for range 3 {
		if t := r.logUniform(pages); t != j {
			g.a(w.page(h, t))
		}
	}
	cross := 0
	if w.opts.CrossLinks > 0 {
		cross = int(w.opts.CrossLinks*2*r.float() + 0.5)
	}
	for range cross {
		t := w.otherHost(r, h)
		if t < 0 {
			break
		}
		if r.chance(3) {
			g.a(node{host: int32(t), kind: kRoot})
		} else {
			g.a(w.page(t, r.logUniform(int(w.pages[t]))))
		}
	}
	if r.chance(20) {
		g.a(node{host: n.host, kind: kOld, a: int32(r.logUniform(pages))})
	}
	if r.chance(25) {
		g.leaf(kGone, n.a, hA)
	}
	if r.chance(15) {
		g.leaf(kFile, n.a, hA)
	}
	if r.chance(30) {
		g.leaf(kPrivate, n.a, hA)
	}
	if r.chance(20) {
		g.leaf(kNofollow, n.a, hNofollow)
	}
	if r.chance(10) {
		g.other("mailto:info@" + w.names[h])
	}
	if r.chance(12) {
		g.other("javascript:void(0)")
	}
	if w.isTrapHost(h) {
		if r.chance(10) {
			g.a(node{host: n.host, kind: kCalendar, a: int32(r.intn(calendarMonths))})
		}
		if r.chance(10) {
			g.a(node{host: n.host, kind: kShop, a: int32(r.intn(shopItems)), b: int32(r.intn(sessions))})
		}
	}
	if w.isPressHost(h) && r.chance(10) {
		g.a(node{host: n.host, kind: kPress, a: int32(r.intn(pressReleases))})
	}
	if w.opts.Embeds {
		x := int32(r.intn(images))
		g.embed(hImg, node{host: n.host, kind: kImage, a: x})
		g.embed(hSrcset2x, node{host: n.host, kind: kImage, a: x, b: 1})
		if r.chance(4) {
			y := int32(r.intn(images))
			g.embed(hSource, node{host: n.host, kind: kImage, a: y, b: 2})
			g.embed(hImg, node{host: n.host, kind: kImage, a: y})
		}
		if r.chance(5) {
			g.embed(hStyleAttr, node{host: n.host, kind: kImage, a: int32(r.intn(images))})
		}
	}
}

// natural returns how a page usually writes a link to t: relative on its
// own host, absolute to another.
func (g *gen) natural(t node) string {
	if t.host != g.from.host {
		return g.w.url(t)
	}
	return relRef(g.w.path(g.from), g.w.path(t))
}

// spell returns t's natural spelling or, with probability Duplicates,
// another spelling of the same URL that a URL normalizer merges with it.
func (g *gen) spell(t node) string {
	natural := g.natural(t)
	if d := g.w.opts.Duplicates; d <= 0 || g.plain || g.s.float() >= d {
		return natural
	}
	w := g.w
	s := g.s
	auth, path := w.authority(int(t.host)), w.path(t)
	name := hostOnly(auth)
	port := auth[len(name):]
	switch s.intn(8) {
	case 0: // the host in another form
		if w.opts.Addressing == Loopback && t.host != cdnHost {
			ip := loopbackIP(int(t.host)).As4()
			if s.chance(2) {
				return "http://0x7f." + strconv.Itoa(int(ip[1])) + "." + strconv.Itoa(int(ip[2])) + "." + strconv.Itoa(int(ip[3])) + port + path
			}
			v := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
			return "http://" + strconv.FormatUint(uint64(v), 10) + port + path
		}
		return "http://" + strings.ToUpper(name) + port + path
	case 1:
		return "HTTP://" + auth + path
	case 2:
		return natural + "#s" + strconv.Itoa(s.intn(10))
	case 3: // an unreserved letter percent-encoded
		if i := strings.IndexAny(path[1:], "abcdefghijklmnopqrstuvwxyz"); i >= 0 && !strings.Contains(path[:i+1], "?") {
			i++
			return "http://" + auth + path[:i] + "%" + strings.ToUpper(strconv.FormatUint(uint64(path[i]), 16)) + path[i+1:]
		}
	case 4: // dot segments
		if s.chance(2) {
			if t.host == g.from.host {
				return "/zz/.." + path
			}
			return "http://" + auth + "/zz/.." + path
		}
		return "http://" + auth + "/." + path
	case 5: // an empty query
		if !strings.ContainsAny(natural, "?#") {
			return natural + "?"
		}
	case 6:
		return "//" + auth + path
	case 7: // the default port, when it is the web's
		if w.port == 80 {
			return "http://" + name + ":80" + path
		}
		return "http://" + strings.ToUpper(auth) + path
	}
	return natural + "#top"
}

// relRef returns a relative reference from the page at path from to the
// path to (both on one host): a sibling or child by name, a page of
// another top-level directory through "../", anything else by its
// absolute path.
func relRef(from, to string) string {
	if q := strings.IndexByte(from, '?'); q >= 0 {
		from = from[:q]
	}
	dir := from[:strings.LastIndexByte(from, '/')+1]
	if rest, ok := strings.CutPrefix(to, dir); ok && !strings.HasPrefix(rest, "?") {
		if rest == "" {
			return "./"
		}
		return rest
	}
	if strings.Count(dir, "/") == 2 {
		return "../" + to[1:]
	}
	return to
}
