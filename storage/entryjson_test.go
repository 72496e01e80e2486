package storage

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// encodeEntry is what CrawlLog wrote before appendEntryJSON, and still
// writes where it gives up.
func encodeEntry(e *Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(e)
	return buf.Bytes(), err
}

// TestEntryJSONFields fails when a field is added to Entry without being
// added to appendEntryJSON (which would drop it from the log silently):
// every field set to a value that is written must appear in the line.
func TestEntryJSONFields(t *testing.T) {
	var e Entry
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("s")
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Float64:
			f.SetFloat(0.5)
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Date(2026, 11, 27, 1, 2, 3, 4, time.UTC)))
		default:
			t.Fatalf("field %s of kind %s: teach appendEntryJSON and this test about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	got, ok := appendEntryJSON(nil, &e)
	if !ok {
		t.Fatal("appendEntryJSON refused an entry with every field set")
	}
	want, err := encodeEntry(&e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("appendEntryJSON:\n%s\nencoding/json:\n%s", got, want)
	}
}

func TestEntryJSON(t *testing.T) {
	at := time.Date(2026, 11, 27, 23, 59, 59, 123456789, time.UTC)
	for _, e := range []Entry{
		{},
		{URL: "http://a.test/x?q=\"1\"&b=<2>", Status: 200, FetchedAt: at, DurationMS: 12.5},
		{URL: "http://a.test/\x00\x01\x1f\x7f\t\n\r\b\f\\", Error: "dns: \xff\xfe bad \u2028 \u2029 é 漢字 😀", FetchedAt: at, DurationMS: 1e-7},
		{Via: "v", HopPath: "LLE", DurationMS: 1e21, Resemblance: 0.7, LastMod: at.In(time.FixedZone("", 5*3600+30*60)), RetryAt: at, Attempt: 3},
		{DurationMS: -0.0000001, SitemapURLs: 5, SitemapCut: -1, Depth: -2, Bytes: math.MaxInt64},
		{DurationMS: 123456789012345678901.0},
	} {
		got, ok := appendEntryJSON([]byte("prefix"), &e)
		if !ok {
			t.Errorf("%+v: refused", e)
			continue
		}
		want, err := encodeEntry(&e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("appendEntryJSON:\n%q\nencoding/json:\n%q", got, want)
		}
	}
}

// TestCrawlLogWriteRefused: an entry that JSON cannot hold (a NaN
// duration, a year past 9999) gets encoding/json's error, and the log
// keeps the lines before it whole.
func TestCrawlLogWriteRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.log.jsonl")
	l, err := OpenCrawlLog(path)
	if err != nil {
		t.Fatal(err)
	}
	good := Entry{URL: "http://a.test/", Status: 200, FetchedAt: time.Unix(1, 0)}
	if err := l.Write(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Entry{
		{URL: "http://a.test/nan", DurationMS: math.NaN()},
		{URL: "http://a.test/inf", Resemblance: math.Inf(1)},
		{URL: "http://a.test/y10k", FetchedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{URL: "http://a.test/zone", RetryAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))},
	} {
		err := l.Write(bad)
		if err == nil || !strings.Contains(err.Error(), "crawl log") {
			t.Errorf("%s: Write = %v, want encoding/json's error", bad.URL, err)
		}
		if _, ok := appendEntryJSON(nil, &bad); ok {
			t.Errorf("%s: appendEntryJSON wrote what encoding/json refuses", bad.URL)
		}
	}
	if err := l.Write(good); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := ReadCrawlLogFile(path)
	if err != nil || len(entries) != 2 {
		t.Fatalf("read back %d entries, %v; want the 2 written", len(entries), err)
	}
}

// FuzzEntryJSON: appendEntryJSON writes what encoding/json writes, or
// gives up where json fails.
func FuzzEntryJSON(f *testing.F) {
	f.Add("http://a.test/", "", "text/html", "\xff\u2028\"\\", int64(200), int64(1<<40), 12.5, 0.0, int64(1795821642123456789), int64(0), int64(0))
	f.Add("", "e", "", "", int64(-1), int64(0), 1e-9, 0.71, int64(-62135596800000000), int64(3600), int64(1))
	f.Fuzz(func(t *testing.T, u, errStr, ctype, other string, status, n int64, dur, res float64, nanos, offset, retry int64) {
		at := time.Unix(0, nanos).In(time.FixedZone("", int(offset%(48*3600))))
		e := Entry{URL: u, Status: int(status), Error: errStr, ContentType: ctype, Bytes: n, Depth: int(n % 100), Via: other,
			HopPath: other, FetchedAt: at.UTC(), DurationMS: dur, Location: other, IP: ctype, WARCFile: errStr,
			SitemapURLs: int(status), SitemapCut: int(n), DuplicateOf: u, NearDuplicateOf: other, Resemblance: res, Attempt: int(retry)}
		if retry%2 != 0 {
			e.LastMod, e.RetryAt = at, at.Add(time.Duration(retry))
		}
		want, werr := encodeEntry(&e)
		got, ok := appendEntryJSON(nil, &e)
		switch {
		case werr != nil && ok:
			t.Fatalf("encoding/json refuses (%v), appendEntryJSON wrote %q", werr, got)
		case werr == nil && !ok:
			t.Fatalf("appendEntryJSON refused what encoding/json writes: %q", want)
		case ok && !bytes.Equal(got, want):
			t.Fatalf("appendEntryJSON:\n%q\nencoding/json:\n%q", got, want)
		}
	})
}
