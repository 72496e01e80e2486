package frontier

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestEntryRoundTrip(t *testing.T) {
	tests := []Entry{
		{URL: "http://a.test/"},
		{URL: "https://b.test/x?y=1", Depth: 20, Redirects: 10, Via: "https://b.test/"},
		{URL: "http://c.test/" + string(bytes.Repeat([]byte("p"), 5000)), Depth: 1 << 20, Via: "\x00\xff"},
		{URL: "http://d.test/a.png", Depth: 3, Via: "http://d.test/", Hops: "LLE"},
		{URL: "http://d.test/sitemap.xml", Depth: 1, Via: "http://d.test/robots.txt", Hops: "S", Sitemap: true},
		{URL: "http://d.test/p", Depth: 2, Via: "http://d.test/sitemap.xml", Hops: "SS", LastMod: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)},
	}
	for _, want := range tests {
		got, err := decodeEntry(nil, encodeEntry(&want))
		if err != nil || got != want {
			t.Errorf("round trip of %+v: got %+v, %v", want, got, err)
		}
	}
}

func TestDecodeEntryErrors(t *testing.T) {
	good := encodeEntry(&Entry{URL: "http://a.test/", Via: "http://v.test/"})
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"version", append([]byte{3}, good[1:]...)},
		{"flags", append(append([]byte(nil), good[:len(good)-2]...), 2, 0)},
		{"lastmod", append(append([]byte(nil), good[:len(good)-1]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{"v1 with v2 fields", append([]byte{entryVersion1}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"empty url", encodeEntry(&Entry{})},
		{"huge length", []byte{entryVersion, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"bad varint", []byte{entryVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tc := range tests {
		_, err := decodeEntry([]byte("k"), tc.in)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", tc.name, err)
		}
	}
}

// A queue written before hop paths (entry version 1) still decodes.
func TestDecodeEntryVersion1(t *testing.T) {
	v1 := []byte{entryVersion1, 2, 1}
	v1 = appendString(v1, "http://a.test/x")
	v1 = appendString(v1, "http://a.test/")
	got, err := decodeEntry(nil, v1)
	want := Entry{URL: "http://a.test/x", Depth: 2, Redirects: 1, Via: "http://a.test/"}
	if err != nil || got != want {
		t.Errorf("decodeEntry(v1) = %+v, %v; want %+v", got, err, want)
	}
}

func TestStateRoundTrip(t *testing.T) {
	want := state{nextSeq: 1 << 40, pages: 3, errors: 2, checkpoint: 9}
	got, err := decodeState(encodeState(&want))
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(&Entry{URL: "http://a.test/", Depth: 3, Redirects: 1, Via: "http://a.test/v"}))
	f.Add([]byte{})
	f.Add([]byte{entryVersion, 0x80})
	f.Add([]byte{entryVersion, 0, 0, 200})
	f.Add(encodeEntry(&Entry{URL: "http://a.test/s", Depth: 2, Via: "http://a.test/robots.txt", Hops: "SS", Sitemap: true, LastMod: time.Unix(1e9, 0).UTC()}))
	f.Add(append([]byte{entryVersion1, 0, 0, 1, 'x'}, 0))
	f.Add(encodeEntry(&Entry{URL: "http://a.test/", Attempt: 2, Hops: "LE", retry: true, due: time.Unix(0, 1e18)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(nil, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := decodeEntry(nil, encodeEntry(&e))
		if err != nil || again != e {
			t.Fatalf("re-encoding %+v gave %+v, %v", e, again, err)
		}
	})
}

func FuzzDecodeState(f *testing.F) {
	f.Add(encodeState(&state{nextSeq: 5, pages: 1, errors: 0, checkpoint: 2}))
	f.Add([]byte{stateVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := decodeState(encodeState(&s))
		if err != nil || again != s {
			t.Fatalf("re-encoding %+v gave %+v, %v", s, again, err)
		}
	})
}

func TestQueueKeys(t *testing.T) {
	k := queueKey("a.test:8080", 42)
	seq, err := parseQueueKey(k, "a.test:8080")
	if err != nil || seq != 42 {
		t.Errorf("parseQueueKey = %d, %v; want 42", seq, err)
	}
	if _, err := parseQueueKey(k, "b.test:8080"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("parseQueueKey with another host = %v, want ErrCorrupt", err)
	}
	// A host's range must not include a host whose name extends it.
	start, end := queueRange("a.test", 1)
	other := queueKey("a.test.evil", 1)
	if bytes.Compare(other, start) >= 0 && bytes.Compare(other, end) < 0 {
		t.Error("range of a.test includes a.test.evil")
	}
	if bytes.Compare(queueKey("a.test", 1<<40), end) >= 0 {
		t.Error("range of a.test excludes its own large sequence numbers")
	}
}
