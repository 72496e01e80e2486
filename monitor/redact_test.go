package monitor

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRedactArgs(t *testing.T) {
	in := []string{"crawler", "crawl", "--redis=redis://:hunter2@r:6379/0", "--redis", "rediss://u:pw2@r:1?addr=n:2",
		"http://a:sekrit@h.example/x", "plain", "x=http://u:p1@a/,https://v:p2@b/"}
	want := []string{"crawler", "crawl", "--redis=redis://r:6379/0", "--redis", "rediss://r:1?addr=n:2",
		"http://h.example/x", "plain", "x=http://a/,https://b/"}
	got := redactArgs(in)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("redactArgs: argument %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// FuzzRedactAll: a password in the userinfo of a URL inside an argument
// never survives, whatever surrounds it.
func FuzzRedactAll(f *testing.F) {
	f.Add("--redis=", "redis", "pw", "h:1/0", "")
	f.Add("x", "http", "p", "a/", ",https://u:q@b/")
	f.Add("", "a", "s", "", "://")
	f.Fuzz(func(t *testing.T, before, scheme, pw, after, tail string) {
		redactAll(before + tail + after) // never panics
		if pw == "" || strings.ContainsAny(pw, "/?#@:") || strings.Contains(before+scheme+after+tail, pw) ||
			strings.ContainsAny(after, "@") || strings.Contains(tail, "://") && strings.ContainsAny(tail, "@") {
			return
		}
		if scheme == "" || strings.IndexFunc(scheme, func(r rune) bool { return r > 127 || !isSchemeByte(byte(r)) }) >= 0 {
			return
		}
		s := before + scheme + "://user:" + pw + "@" + after + tail
		if got := redactAll(s); strings.Contains(got, pw) {
			t.Fatalf("redactAll(%q) = %q keeps the password", s, got)
		}
	})
}

// With Pprof, /debug/pprof/cmdline shows the command line without the
// credentials in it.
func TestPprofCmdlineRedacted(t *testing.T) {
	args := os.Args
	os.Args = []string{"crawler", "crawl", "--redis", "redis://:hunter2@127.0.0.1:6379", "http://bob:sekrit@h.example/"}
	defer func() { os.Args = args }()
	_, base := startMonitor(t, Options{Pprof: true}, &fakeSource{s: sampleStats()})
	code, _, body := get(t, base+"/debug/pprof/cmdline")
	if want := "crawler\x00crawl\x00--redis\x00redis://127.0.0.1:6379\x00http://h.example/"; code != 200 || body != want {
		t.Errorf("cmdline = %d %q, want 200 %q", code, body, want)
	}
}

// A client is held to MaxConnsPerClient connections: one more is closed
// at once, not queued, while another client still gets in.
func TestConnsPerClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimiter(ln, 4, 2)
	defer l.Close()
	go func() {
		for {
			if _, err := l.Accept(); err != nil {
				return
			}
		}
	}()
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !os.IsTimeout(err)
	}
	a1, a2, a3 := dial("127.0.0.2"), dial("127.0.0.2"), dial("127.0.0.2")
	if !closed(a3) || closed(a1) || closed(a2) {
		t.Error("a client's third connection was not refused, or one of its first two was")
	}
	b := dial("127.0.0.3")
	if closed(b) {
		t.Error("another client's connection was refused")
	}
	if n := l.open(); n != 3 {
		t.Errorf("open connections %d, want 3", n)
	}
}
