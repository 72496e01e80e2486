package fetch

import (
	"bytes"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// extractV0 is Extract as it was before it found embeds (commit 7f2b9ab):
// links only, every body through charset.NewReader and the x/net/html
// Tokenizer. It is kept verbatim (but for its name and metaNofollow's
// argument type) as the baseline of BenchmarkExtract, and
// TestExtractFindsTheOldLinks's golden files come from it.
func extractV0(body []byte, contentType string, base *url.URL, opts ExtractOptions) (*Extraction, error) {
	if !IsHTML(contentType, body) {
		return nil, ErrNotHTML
	}
	if opts.MaxLinks == 0 {
		opts.MaxLinks = DefaultMaxOutlinks
	}
	if opts.MaxHrefLength == 0 {
		opts.MaxHrefLength = DefaultMaxHrefLength
	}
	ex := &Extraction{Base: base}
	var r io.Reader = bytes.NewReader(body)
	if cr, err := charset.NewReader(r, contentType); err == nil {
		r = cr
	}
	// The tokenizer, not the tree builder: it keeps memory proportional to
	// the largest token, not the document, and never allocates a DOM.
	z := html.NewTokenizer(r)
	baseSeen := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF, or a read error from the charset decoder: keep what we have
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if !hasAttr {
			continue
		}
		var tag, urlAttr string
		switch string(name) {
		case "a", "area", "link":
			tag, urlAttr = string(name), "href"
		case "frame", "iframe":
			tag, urlAttr = string(name), "src"
		case "base":
			tag, urlAttr = "base", "href"
		case "meta":
			tag = "meta"
		default:
			continue
		}
		var val, rel, metaName, metaContent, metaEquiv string
		var haveVal, haveRel, haveName, haveContent, haveEquiv bool
		for hasAttr {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			// The first of duplicate attributes wins (HTML Standard,
			// "attribute name" state).
			switch string(k) {
			case urlAttr:
				if !haveVal {
					val, haveVal = string(v), true
				}
			case "rel":
				if !haveRel {
					rel, haveRel = strings.ToLower(string(v)), true
				}
			case "name":
				if tag == "meta" && !haveName {
					metaName, haveName = string(v), true
				}
			case "content":
				if tag == "meta" && !haveContent {
					metaContent, haveContent = string(v), true
				}
			case "http-equiv":
				if tag == "meta" && !haveEquiv {
					metaEquiv, haveEquiv = string(v), true
				}
			}
		}
		switch tag {
		case "meta":
			if strings.EqualFold(strings.TrimSpace(metaName), "robots") && metaNofollow([]byte(metaContent)) {
				ex.MetaNofollow = true
			}
			if !strings.EqualFold(strings.TrimSpace(metaEquiv), "refresh") {
				continue
			}
			// <meta http-equiv="refresh" content="5; url=next.html"> is a
			// redirect that only HTML knows about.
			var ok bool
			if val, ok = refreshURL(metaContent); !ok {
				continue
			}
			rel = "refresh"
		case "base":
			// Only the first base element with an href counts (HTML
			// Standard, "frozen base URL").
			if haveVal && !baseSeen {
				baseSeen = true
				if b := resolveBase(base, trimHref(val)); b != nil {
					ex.Base = b
				}
			}
			continue
		}
		if !haveVal && tag != "meta" {
			continue
		}
		href := trimHref(val)
		if !followable(href) || (opts.MaxHrefLength > 0 && len(href) > opts.MaxHrefLength) {
			ex.Skipped++
			continue
		}
		nofollow := hasToken(rel, "nofollow")
		if nofollow && !opts.KeepNofollow {
			ex.NofollowSkipped++
			continue
		}
		if opts.MaxLinks > 0 && len(ex.Links) >= opts.MaxLinks {
			ex.Dropped++
			continue
		}
		ex.Links = append(ex.Links, Link{Href: href, Tag: tag, Rel: rel, NoFollow: nofollow})
	}
	if ex.MetaNofollow {
		// The meta element usually comes first, but may follow links.
		kept := ex.Links[:0]
		for _, l := range ex.Links {
			l.NoFollow = true
			if opts.KeepNofollow {
				kept = append(kept, l)
			} else {
				ex.NofollowSkipped++
			}
		}
		ex.Links = kept
	}
	if len(ex.Links) == 0 {
		ex.Links = nil
	}
	return ex, nil
}
