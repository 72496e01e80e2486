package fetch

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestFetchBodyIf(t *testing.T) {
	const etag, lastMod = `"v1"`, "Mon, 02 Jan 2006 15:04:05 GMT"
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", lastMod)
		if r.Header.Get("If-None-Match") == etag || r.Header.Get("If-None-Match") == "" && r.Header.Get("If-Modified-Since") == lastMod {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write([]byte("the page"))
	}))
	defer srv.Close()
	f := newTestFetcher(t, Options{AllowPrivate: true})
	for _, tc := range []struct {
		name       string
		cond       Conditional
		wantStatus int
	}{
		{"both", Conditional{ETag: etag, LastModified: lastMod}, 304},
		{"etag only", Conditional{ETag: etag}, 304},
		{"last-modified only", Conditional{LastModified: lastMod}, 304},
		{"neither", Conditional{}, 200},
		{"stale etag", Conditional{ETag: `"v0"`, LastModified: lastMod}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := f.FetchBodyIf(context.Background(), srv.URL+"/p", tc.cond)
			if err != nil {
				t.Fatalf("FetchBodyIf: %v", err)
			}
			for name, want := range map[string]string{"If-None-Match": tc.cond.ETag, "If-Modified-Since": tc.cond.LastModified} {
				if g := got.Get(name); g != want {
					t.Errorf("sent %s %q, want %q", name, g, want)
				}
				if want != "" && !bytes.Contains(res.RawRequest, []byte(name+": "+want+"\r\n")) {
					t.Errorf("RawRequest lacks %s: %s\n%s", name, want, res.RawRequest)
				}
			}
			if res.Status != tc.wantStatus {
				t.Fatalf("status %d, want %d", res.Status, tc.wantStatus)
			}
			if tc.wantStatus == 304 {
				if len(res.Body) != 0 || res.Truncated != "" || res.Location != "" {
					t.Errorf("304: body %q, truncated %q, location %q; want none", res.Body, res.Truncated, res.Location)
				}
				if !bytes.HasPrefix(res.RawResponse, []byte("HTTP/1.1 304")) || !bytes.HasSuffix(res.RawResponse, []byte("\r\n\r\n")) {
					t.Errorf("RawResponse %q, want the 304's head alone", res.RawResponse)
				}
			} else if string(res.Body) != "the page" {
				t.Errorf("body %q", res.Body)
			}
		})
	}
}
