package nginxtest

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStartServes checks the configuration the crawl tests rely on, over
// HTTP and HTTPS: a gzip type comes gzip'd and chunked with nginx's ETag,
// a PNG comes as it is with Content-Length, both connections keep alive,
// and two fetches of a file differ only in their Date.
func TestStartServes(t *testing.T) {
	root := t.TempDir()
	css := []byte(strings.Repeat("body { color: #123; }\n", 200))
	png := []byte("\x89PNG\r\n\x1a\n not really an image, but served as one")
	for name, b := range map[string][]byte{"style.css": css, "logo.png": png} {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Start(t, Options{Root: root, TLS: true})
	date := regexp.MustCompile(`\r\nDate: [^\r]*\r\n`)
	for _, origin := range []string{s.URL, s.TLSURL} {
		u, err := url.Parse(origin)
		if err != nil {
			t.Fatal(err)
		}
		roots := s.CertPool()
		if u.Scheme == "http" {
			roots = nil
		}
		get := func(path string) []byte {
			t.Helper()
			raw, err := Exchange(u.Host, roots, []byte("GET "+path+" HTTP/1.1\r\nHost: "+u.Host+"\r\nAccept-Encoding: gzip\r\n\r\n"))
			if err != nil {
				t.Fatalf("%s%s: %v", origin, path, err)
			}
			return raw
		}
		raw := get("/style.css")
		head, body, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
		for _, want := range []string{"HTTP/1.1 200 OK\r\n", "\r\nServer: nginx", "\r\nETag: ", "\r\nContent-Encoding: gzip", "\r\nTransfer-Encoding: chunked", "\r\nConnection: keep-alive", "\r\nVary: Accept-Encoding"} {
			if !bytes.Contains(head, []byte(want)) {
				t.Errorf("%s/style.css: head lacks %q:\n%s", origin, want, head)
			}
		}
		zr, err := gzip.NewReader(httputil.NewChunkedReader(bytes.NewReader(body)))
		if err != nil {
			t.Fatalf("%s/style.css: %v", origin, err)
		}
		if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, css) {
			t.Errorf("%s/style.css: body decodes to %d bytes (%v), want the file's %d", origin, len(got), err, len(css))
		}
		if again := get("/style.css"); !bytes.Equal(date.ReplaceAll(again, nil), date.ReplaceAll(raw, nil)) {
			t.Errorf("%s/style.css: two fetches differ beyond Date:\n%q\n%q", origin, raw, again)
		}
		raw = get("/logo.png")
		head, body, _ = bytes.Cut(raw, []byte("\r\n\r\n"))
		if !bytes.Contains(head, []byte("\r\nContent-Length: ")) || bytes.Contains(head, []byte("Content-Encoding")) || !bytes.Equal(body, png) {
			t.Errorf("%s/logo.png: want the file as it is with Content-Length, got\n%q", origin, raw)
		}
	}
	// nginx logs a request after its response is written, so the last
	// line may come a moment after the client has read the response.
	var log []string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if log = s.AccessLog(t); len(log) >= 8 {
			break
		}
	}
	if len(log) != 6+2 { // and the two HEADs of Start
		t.Errorf("access log has %d lines, want 8: %q", len(log), log)
	}
}
