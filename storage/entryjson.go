package storage

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendEntryJSON appends e as encoding/json's Encoder (with
// SetEscapeHTML(false)) writes it, newline included, without reflection:
// encoding/json was 3% of a crawl's CPU (docs/BENCHMARKS.md, "The WARC writer": 1,162 against 2,262 ns per line).
// ok is false, and dst returned unchanged, for what json would refuse or
// what this does not write the same way (a float that is NaN or
// infinite, a time that RFC 3339 cannot hold): the caller then uses
// encoding/json, which gives its error. FuzzEntryJSON checks the two
// agree byte for byte; TestEntryJSONFields that no field of Entry is
// left out.
func appendEntryJSON(dst []byte, e *Entry) (_ []byte, ok bool) {
	b := dst
	b = append(b, `{"url":`...)
	b = appendJSONString(b, e.URL)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, e.Error)
	b = append(b, `,"content_type":`...)
	b = appendJSONString(b, e.ContentType)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(e.Depth), 10)
	b = append(b, `,"via":`...)
	b = appendJSONString(b, e.Via)
	b = append(b, `,"hop_path":`...)
	b = appendJSONString(b, e.HopPath)
	b = append(b, `,"fetched_at":`...)
	if b, ok = appendJSONTime(b, e.FetchedAt); !ok {
		return dst, false
	}
	b = append(b, `,"duration_ms":`...)
	if b, ok = appendJSONFloat(b, e.DurationMS); !ok {
		return dst, false
	}
	b = appendJSONStringField(b, `,"location":`, e.Location)
	b = appendJSONStringField(b, `,"truncated":`, e.Truncated)
	b = appendJSONStringField(b, `,"ip":`, e.IP)
	b = appendJSONStringField(b, `,"warc_file":`, e.WARCFile)
	b = appendJSONStringField(b, `,"warc_record_id":`, e.WARCRecordID)
	if b, ok = appendJSONTimeField(b, `,"lastmod":`, e.LastMod); !ok {
		return dst, false
	}
	b = appendJSONIntField(b, `,"sitemap_urls":`, e.SitemapURLs)
	b = appendJSONIntField(b, `,"sitemap_cut":`, e.SitemapCut)
	b = appendJSONStringField(b, `,"sitemap_error":`, e.SitemapError)
	b = appendJSONStringField(b, `,"duplicate_of":`, e.DuplicateOf)
	b = appendJSONStringField(b, `,"near_duplicate_of":`, e.NearDuplicateOf)
	if e.Resemblance != 0 {
		b = append(b, `,"resemblance":`...)
		if b, ok = appendJSONFloat(b, e.Resemblance); !ok {
			return dst, false
		}
	}
	b = appendJSONIntField(b, `,"attempt":`, e.Attempt)
	if b, ok = appendJSONTimeField(b, `,"retry_at":`, e.RetryAt); !ok {
		return dst, false
	}
	b = appendJSONStringField(b, `,"recrawl":`, e.Recrawl)
	b = appendJSONStringField(b, `,"previous":`, e.Previous)
	if b, ok = appendJSONTimeField(b, `,"previous_date":`, e.PreviousDate); !ok {
		return dst, false
	}
	return append(b, "}\n"...), true
}

// appendJSONStringField appends an omitempty string field.
func appendJSONStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendJSONIntField appends an omitempty int field.
func appendJSONIntField(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}

// appendJSONTimeField appends an omitzero time field; ok is false where
// appendJSONTime's is.
func appendJSONTimeField(b []byte, key string, t time.Time) ([]byte, bool) {
	if t.IsZero() {
		return b, true
	}
	return appendJSONTime(append(b, key...), t)
}

// appendJSONTime appends t as time.Time's MarshalJSON does: RFC 3339 with
// nanoseconds, quoted; ok is false where MarshalJSON fails.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}

// appendJSONFloat appends f as encoding/json writes a float64; ok is
// false for NaN and infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// "e-09" -> "e-9", as encoding/json cleans it up.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json does without HTML
// escaping: '"', '\\' and control characters escaped, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
