package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layercrawl/layercrawl/internal/replaywebtest"
	"github.com/layercrawl/layercrawl/storage"
)

// replaySite serves a page with a stylesheet and an image, and a second
// page, on 127.0.36.1.
func replaySite(t *testing.T) (base string, stop func()) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 7, 5))
	for i := range img.Pix {
		img.Pix[i] = 200
	}
	img.Set(3, 2, color.RGBA{255, 0, 0, 255})
	var pngBytes bytes.Buffer
	if err := png.Encode(&pngBytes, img); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><head><title>Replayed page</title><link rel="stylesheet" href="/style.css"></head>
<body><div id="box">box</div><img id="pic" src="/pic.png"><a href="/two.html">two</a></body></html>`)
	})
	// The second page's stylesheet has the first's bytes at another URL:
	// whichever is fetched second is archived as a revisit record.
	mux.HandleFunc("/two.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<title>Second</title><link rel="stylesheet" href="/copy.css"><div id="box">two</div><img id="pic" src="/pic.png">`)
	})
	css := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		// Padded past crawl.DefaultRevisitMinSize.
		io.WriteString(w, "#box { background-color: rgb(10, 20, 30); width: 123px; }\n/* "+strings.Repeat("padding ", 150)+"*/\n")
	}
	mux.HandleFunc("/style.css", css)
	mux.HandleFunc("/copy.css", css)
	mux.HandleFunc("/pic.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngBytes.Bytes())
	})
	ln, err := net.Listen("tcp", "127.0.36.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }
}

// TestCrawlIndexAndPack crawls a small site with the crawler command and
// checks that the crawl wrote its index (one line per response record,
// each pointing at its record), that --no-index writes none, and that
// "crawler index" and "crawler pack" work on the output and refuse a
// directory that is not a crawl's with exit status 2.
func TestCrawlIndexAndPack(t *testing.T) {
	base, stop := replaySite(t)
	defer stop()
	dir := t.TempDir()
	// Files of about one record pair: the index spans several, each with
	// its sidecar.
	if code, _, stderr := runCrawler(t, context.Background(), "--out", dir, "--delay", "-1", "--allow-private", "--warc-max-size", "3000", base); code != 0 {
		t.Fatalf("crawl exit %d: %s", code, stderr)
	}
	checkCrawlIndex(t, dir)
	checkSidecarIndex(t, dir, 0)
	if files, _ := storage.CrawlWARCFiles(dir); len(files) < 3 {
		t.Errorf("%d WARC files, want several", len(files))
	}
	noIndex := t.TempDir()
	if code, _, stderr := runCrawler(t, context.Background(), "--out", noIndex, "--delay", "-1", "--allow-private", "--no-index", base); code != 0 {
		t.Fatalf("crawl exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(noIndex, "indexes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("crawl --no-index wrote indexes/: %v", err)
	}
	var o, e bytes.Buffer
	if code := run(context.Background(), env{stdout: &o, stderr: &e}, []string{"index", noIndex}); code != 0 {
		t.Fatalf("index exit %d: %s", code, e.String())
	}
	checkCrawlIndex(t, noIndex)
	wacz := filepath.Join(t.TempDir(), "site.wacz")
	if code := run(context.Background(), env{stdout: &o, stderr: &e}, []string{"pack", dir, wacz}); code != 0 || !strings.Contains(o.String(), "2 pages (1 seeds)") {
		t.Fatalf("pack exit %d: %s%s", code, o.String(), e.String())
	}
	for _, c := range []struct {
		args  []string
		index string
	}{{nil, "indexes/index.cdxj"}, {[]string{"--compress-index-above", "2"}, "indexes/index.idx"}} {
		if code := run(context.Background(), env{stdout: io.Discard, stderr: &e}, append(append([]string{"pack"}, c.args...), dir, wacz)); code != 0 {
			t.Fatalf("pack %v: exit %d: %s", c.args, code, e.String())
		}
		zr, err := zip.OpenReader(wacz)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zr.Open(c.index); err != nil {
			t.Errorf("pack %v: no %s: %v", c.args, c.index, err)
		}
		for _, f := range zr.File {
			if strings.Contains(f.Name, "perwarc") {
				t.Errorf("pack %v: a sidecar index packed: %s", c.args, f.Name)
			}
		}
		zr.Close()
	}
	for _, args := range [][]string{{"index", t.TempDir()}, {"pack", t.TempDir(), wacz + "2"}, {"index"}, {"pack", dir}} {
		if code := run(context.Background(), env{stdout: io.Discard, stderr: io.Discard}, args); code != exitUsage {
			t.Errorf("crawler %v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// checkCrawlIndex checks dir/indexes/index.cdxj against the crawl log:
// a line for every archived response, at the record the log names.
func checkCrawlIndex(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, storage.CrawlIndexPath))
	if err != nil {
		t.Fatal(err)
	}
	byURL := map[string]storage.CDXJEntry{}
	for line := range bytes.Lines(b) {
		e, err := storage.ParseCDXJLine(line)
		if err != nil {
			t.Fatal(err)
		}
		byURL[e.URL] = e
	}
	n := 0
	for _, le := range readLog(t, filepath.Join(dir, "crawl.log.jsonl")) {
		if le.WARCRecordID == "" {
			continue
		}
		n++
		e, ok := byURL[le.URL]
		if !ok || e.Filename != le.WARCFile || e.Status != le.Status {
			t.Errorf("log line %+v: index entry %+v", le, e)
			continue
		}
		f, err := os.Open(filepath.Join(dir, "warc", e.Filename))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := storage.NewWARCReader(io.NewSectionReader(f, e.Offset, e.Length)).Next()
		f.Close()
		if err != nil || rec.Header.Get("WARC-Record-ID") != le.WARCRecordID || rec.Length != e.Length {
			t.Errorf("%s: the record at %d+%d is not the logged one: %v", le.URL, e.Offset, e.Length, err)
		}
	}
	robots := 0
	for u := range byURL {
		if strings.HasSuffix(u, "/robots.txt") {
			robots++ // archived, not logged
		}
	}
	revisits := 0
	for _, e := range byURL {
		if e.Mime == "warc/revisit" {
			revisits++
		}
	}
	if revisits != 1 {
		t.Errorf("%d revisit lines, want 1 (style.css and copy.css are the same bytes)", revisits)
	}
	if n < 5 || len(byURL) != n+robots {
		t.Errorf("index has %d URLs, the log %d archived responses (want at least 5)", len(byURL), n)
	}
}

// TestReplayInChromium packs a crawl as WACZ and opens it in ReplayWeb.page
// (its npm package's static app) in headless Chromium, driven through the
// DevTools protocol: the crawled page renders in the replay frame with its
// stylesheet applied and its image decoded, after the crawled site has
// been shut down, so everything came from the archive; so does the second
// page, whose stylesheet one of the two is archived as a revisit record.
// It does so with the index as index.cdxj and as index.cdx.gz with its
// index.idx.
func TestReplayInChromium(t *testing.T) {
	bin := chromium(t)
	app := replaywebtest.Dir(t)
	base, stop := replaySite(t)
	dir := t.TempDir()
	if code, _, stderr := runCrawler(t, context.Background(), "--out", dir, "--delay", "-1", "--allow-private", base); code != 0 {
		t.Fatalf("crawl exit %d: %s", code, stderr)
	}
	stop() // from here on, only the archive can answer
	// The same crawl twice: with indexes/index.cdxj, and with the
	// compressed index.cdx.gz and index.idx, two lines a block.
	pub := t.TempDir()
	if _, err := storage.PackWACZ(context.Background(), dir, filepath.Join(pub, "site.wacz"), storage.WACZOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.PackWACZ(context.Background(), dir, filepath.Join(pub, "site-gz.wacz"), storage.WACZOptions{CompressIndexAbove: 1, IndexBlockLines: 2}); err != nil {
		t.Fatal(err)
	}
	stamps, revisits := map[string]string{}, 0
	idx, _ := os.ReadFile(filepath.Join(dir, storage.CrawlIndexPath))
	for line := range bytes.Lines(idx) {
		if e, err := storage.ParseCDXJLine(line); err == nil {
			stamps[e.URL] = e.Timestamp
			if e.Mime == "warc/revisit" {
				revisits++
			}
		}
	}
	if revisits != 1 {
		t.Fatalf("the archive holds %d revisit records, want 1 (one of the two stylesheets)", revisits)
	}
	mux := http.NewServeMux()
	mux.Handle("/wacz/", http.StripPrefix("/wacz/", http.FileServer(http.Dir(pub))))
	mux.Handle("/", http.FileServer(http.Dir(app)))
	ln, err := net.Listen("tcp", "127.0.36.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	origin := "http://" + ln.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cdp := startCDP(t, ctx, bin)
	var target struct {
		TargetID string `json:"targetId"`
	}
	cdp.call(t, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	cdp.call(t, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	for _, c := range []struct{ wacz, url, title string }{
		{"site.wacz", base, "Replayed page"}, {"site.wacz", base + "two.html", "Second"},
		{"site-gz.wacz", base, "Replayed page"}, {"site-gz.wacz", base + "two.html", "Second"},
	} {
		page := origin + "/index.html?source=" + url.QueryEscape(origin+"/wacz/"+c.wacz) +
			"#view=replay&url=" + url.QueryEscape(c.url) + "&ts=" + stamps[c.url]
		cdp.call(t, att.SessionID, "Page.navigate", map[string]any{"url": page}, nil)
		var got replayed
		for {
			var res struct {
				Result struct {
					Value string `json:"value"`
				} `json:"result"`
			}
			cdp.call(t, att.SessionID, "Runtime.evaluate", map[string]any{"expression": findReplayed, "returnByValue": true}, &res)
			if res.Result.Value != "" {
				if err := json.Unmarshal([]byte(res.Result.Value), &got); err != nil {
					t.Fatal(err)
				}
				if got.Title == c.title && got.Background == "rgb(10, 20, 30)" && got.ImageWidth == 7 {
					break
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("%s of %s did not render from the archive within the time limit; last seen in the replay frame: %+v", c.url, c.wacz, got)
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("replay frame: %+v", got)
		if got.Width != "123px" || got.ImageHeight != 5 || !strings.Contains(got.Location, "/w/") || !strings.HasSuffix(got.Location, "mp_/"+c.url) {
			t.Errorf("replayed %s of %s: %+v; want the stylesheet's width 123px, the 7x5 image, a /w/ replay URL of the page", c.url, c.wacz, got)
		}
	}
}

// replayed is what findReplayed reports of the replay frame.
type replayed struct {
	Background  string `json:"bg"`
	Width       string `json:"width"`
	ImageWidth  int    `json:"imgw"`
	ImageHeight int    `json:"imgh"`
	Title       string `json:"title"`
	Location    string `json:"location"`
}

// findReplayed searches the documents of ReplayWeb.page (through shadow
// roots and same-origin frames) for the replayed page's #box and reports
// its computed style and the state of its image, or "" before it is there.
const findReplayed = `(() => {
  const docs = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.tagName === 'IFRAME') {
        try { const d = el.contentDocument; if (d) { docs.push(d); walk(d); } } catch (e) {}
      }
    }
  };
  walk(document);
  for (const d of docs) {
    const box = d.getElementById('box');
    if (!box) continue;
    const cs = d.defaultView.getComputedStyle(box);
    const img = d.getElementById('pic');
    return JSON.stringify({bg: cs.backgroundColor, width: cs.width,
      imgw: img && img.complete ? img.naturalWidth : -1, imgh: img && img.complete ? img.naturalHeight : -1,
      title: d.title, location: d.location.href});
  }
  return "";
})()`

// cdpConn speaks the DevTools protocol with a Chromium started with
// --remote-debugging-pipe: JSON messages ended by a NUL byte, written to
// its fd 3 and read from its fd 4.
type cdpConn struct {
	w      io.Writer
	mu     sync.Mutex // protects nextID, calls
	nextID int
	calls  map[int]chan cdpReply
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func startCDP(t *testing.T, ctx context.Context, bin string) *cdpConn {
	t.Helper()
	toChrome, chromeIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	chromeOut, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // fd 3: Chromium reads; fd 4: it writes
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toChrome.Close()
	fromChrome.Close()
	done := make(chan struct{})
	t.Cleanup(func() {
		chromeIn.Close()
		cmd.Process.Kill()
		cmd.Wait()
		<-done
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	c := &cdpConn{w: chromeIn, calls: map[int]chan cdpReply{}}
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(chromeOut, 1<<20)
		for {
			msg, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m struct {
				ID int `json:"id"`
				cdpReply
			}
			if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
				continue // an event
			}
			c.mu.Lock()
			ch := c.calls[m.ID]
			delete(c.calls, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m.cdpReply
			}
		}
	}()
	go func() { <-ctx.Done(); chromeOut.Close() }()
	return c
}

// call sends a command (to a session's target when session is set) and
// decodes its result into out.
func (c *cdpConn) call(t *testing.T, session, method string, params any, out any) {
	t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpReply, 1)
	c.calls[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	if _, err := c.w.Write(append(b, 0)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			t.Fatalf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no answer from Chromium in 60 s", method)
	}
}
