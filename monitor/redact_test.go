package monitor

import (
	"os"
	"strings"
	"testing"
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
