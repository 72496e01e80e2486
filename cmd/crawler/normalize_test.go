package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/layercrawl/layercrawl/urlnorm"
)

func runNormalizeCmd(t testing.TB, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, append([]string{"normalize"}, args...))
	return out.String(), errb.String(), code
}

// inputLines counts the lines of an input as the command sees them: a
// final line without '\n' counts, an empty input has none.
func inputLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func TestNormalizeCommand(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"canonical URLs and errors", nil,
			"HTTP://Example.COM:80/a/./b?q=%7e#f\nmailto:x@y\n\n  https://h/x  \r\nhttp://h/\tz\n",
			"http://example.com/a/b?q=~\n" +
				"ERROR\turlnorm: parse \"mailto:x@y\": unsupported scheme: \"mailto:\" (only http and https are crawled)\n" +
				"ERROR\turlnorm: parse \"\": empty URL: the line holds no URL (only whitespace or nothing)\n" +
				"https://h/x\n" +
				"http://h/z\n"},
		{"last line without newline", nil, "http://a\nhttp://b", "http://a/\nhttp://b/\n"},
		{"empty input", nil, "", ""},
		{"segments", []string{"--segments"}, "https://h:8443/a/b/?x=/y#!z\nhttp://h\n",
			"https://h:8443\ta\tb\t?x=/y#!z\nhttp://h\t\n"},
		{"segments without scheme", []string{"--segments", "--ignore-scheme"}, "https://h/a\n", "h\ta\n"},
		{"options", []string{"--sort-query", "--remove-session-params", "--collapse-slashes", "--trailing-slash=remove",
			"--remove-default-pages", "--fold-www", "--decode-numeric-hosts"},
			"http://www.example.com//a//index.html?b=1&utm_source=x&a=2\nhttp://[::ffff:7f00:1]/\n",
			"http://example.com/a?a=2&b=1\nhttp://127.0.0.1/\n"},
		{"custom session params", []string{"--remove-session-params", "--session-params=tok*,x"}, "http://h/?token=1&x=2&sid=3\n",
			"http://h/?sid=3\n"},
		{"base", []string{"--base", "http://h/a/b?q"}, "c\n../d\n?z\n//o/p\n", "http://h/a/c\nhttp://h/d\nhttp://h/a/b?z\nhttp://o/p\n"},
		{"long line does not desync", []string{"--max-line=20"},
			"http://h/1\nhttp://h/" + strings.Repeat("x", 100) + "\nhttp://h/2\nhttp://h/" + strings.Repeat("y", 11) + "\r\nhttp://h/" + strings.Repeat("z", 12),
			"http://h/1\nERROR\tline longer than 20 bytes (raise --max-line to accept it)\nhttp://h/2\nhttp://h/" + strings.Repeat("y", 11) + "\n" +
				"ERROR\tline longer than 20 bytes (raise --max-line to accept it)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stderr, code := runNormalizeCmd(t, tt.stdin, tt.args...)
			if code != 0 {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			if got != tt.want {
				t.Fatalf("stdout:\n%q\nwant:\n%q", got, tt.want)
			}
			if g, w := strings.Count(got, "\n"), inputLines(tt.stdin); g != w {
				t.Fatalf("%d output lines for %d input lines", g, w)
			}
		})
	}
}

func TestNormalizeCommandLongLines(t *testing.T) {
	// Lines far longer than bufio's 64 KiB buffer, around the default
	// limit of 1 MiB, and a 65,535-byte URL that must pass.
	url65k := "http://h/" + strings.Repeat("a", 65535-len("http://h/"))
	huge := "http://h/" + strings.Repeat("b", defaultMaxLine)
	in := url65k + "\n" + huge + "\nhttp://h/after\n"
	got, _, code := runNormalizeCmd(t, in)
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	want := url65k + "\nERROR\tline longer than 1048576 bytes (raise --max-line to accept it)\nhttp://h/after\n"
	if got != want {
		t.Fatalf("got %d bytes, %d lines; want the 65,535-byte URL, one ERROR, then http://h/after", len(got), strings.Count(got, "\n"))
	}
}

func TestNormalizeCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--trailing-slash=sideways"},
		{"--max-line=0"},
		{"--base=/relative"},
		{"--session-params=a=b", "--remove-session-params"},
		{"stray"},
	} {
		if _, stderr, code := runNormalizeCmd(t, "", args...); code != 2 || stderr == "" {
			t.Errorf("args %q: exit code %d, stderr %q; want 2 and a message", args, code, stderr)
		}
	}
}

// FuzzNormalizeCommand checks the stream framing on any input: exactly one
// output line per input line, whatever the bytes and line lengths.
func FuzzNormalizeCommand(f *testing.F) {
	f.Add("http://a\n\n\r\nx\rhttp://b", 8)
	f.Add("http://h/"+strings.Repeat("x", 300)+"\nhttp://h/", 16)
	f.Add("\n\n\n", 1)
	f.Fuzz(func(t *testing.T, in string, maxLine int) {
		if maxLine < 1 || maxLine > 1<<16 {
			maxLine = 1 + (maxLine&0xffff)%4096
		}
		got, stderr, code := runNormalizeCmd(t, in, "--max-line", itoa(maxLine))
		if code != 0 {
			t.Fatalf("exit code %d: %s", code, stderr)
		}
		if g, w := strings.Count(got, "\n"), inputLines(in); g != w {
			t.Fatalf("%d output lines for %d input lines", g, w)
		}
		if got != "" && !strings.HasSuffix(got, "\n") {
			t.Fatalf("output does not end with a newline")
		}
	})
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestCrawlNormalizeFlags checks that every normalization flag of the
// crawl, given on the command line or in a config file, reaches
// crawl.Options.Normalize, and that all are off by default.
func TestCrawlNormalizeFlags(t *testing.T) {
	c, _, err := parseTestArgs(t, "--out", "o", "https://example.org/")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.opts.Normalize, urlnorm.Options{}) {
		t.Errorf("default normalization %+v, want the zero urlnorm.Options", c.opts.Normalize)
	}
	for _, tc := range []struct {
		flag, value, toml string
		want              urlnorm.Options
	}{
		{"sort-query", "true", "true", urlnorm.Options{SortQuery: true}},
		{"remove-session-params", "true", "true", urlnorm.Options{RemoveSessionParams: true}},
		{"session-params", "sid,utm_*", `"sid,utm_*"`, urlnorm.Options{SessionParams: []string{"sid", "utm_*"}}},
		{"collapse-slashes", "true", "true", urlnorm.Options{CollapseSlashes: true}},
		{"trailing-slash", "remove", `"remove"`, urlnorm.Options{TrailingSlash: urlnorm.RemoveTrailingSlash}},
		{"remove-default-pages", "true", "true", urlnorm.Options{RemoveDefaultPages: true}},
		{"fold-www", "true", "true", urlnorm.Options{FoldWWW: true}},
		{"ignore-scheme", "true", "true", urlnorm.Options{IgnoreScheme: true}},
		{"decode-numeric-hosts", "true", "true", urlnorm.Options{DecodeNumericHosts: true}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			c, _, err := parseTestArgs(t, "--"+tc.flag+"="+tc.value, "--out", "o", "https://example.org/")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.opts.Normalize, tc.want) {
				t.Errorf("--%s=%s: %+v, want %+v", tc.flag, tc.value, c.opts.Normalize, tc.want)
			}
			c, _, err = parseTestArgs(t, "--config", writeConfig(t, tc.flag+" = "+tc.toml+"\n"), "--out", "o", "https://example.org/")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.opts.Normalize, tc.want) {
				t.Errorf("config %s = %s: %+v, want %+v", tc.flag, tc.toml, c.opts.Normalize, tc.want)
			}
		})
	}
}

// TestCrawlNormalizes crawls a local site whose links differ only in the
// order of their query pairs: with --sort-query the crawl fetches one of
// them, without it both.
func TestCrawlNormalizes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><a href="/p?a=1&b=2">x</a> <a href="/p?b=2&a=1">y</a></body></html>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		flags []string
		want  int // fetches of /p
	}{
		{nil, 2},
		{[]string{"--sort-query"}, 1},
	} {
		dir := t.TempDir()
		var o, e strings.Builder
		args := append([]string{"crawl", "--out", dir, "--delay", "-1", "--allow-private", "--progress-interval", "-1",
			"--no-sitemaps", "--no-embeds"}, tc.flags...)
		if code := run(context.Background(), env{stdin: strings.NewReader(""), stdout: &o, stderr: &e}, append(args, srv.URL+"/")); code != 0 {
			t.Fatalf("%v: exit %d:\n%s", tc.flags, code, e.String())
		}
		log, err := os.ReadFile(filepath.Join(dir, "crawl.log.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
			var entry struct{ URL string }
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if strings.HasPrefix(entry.URL, srv.URL+"/p?") {
				got++
			}
		}
		if got != tc.want {
			t.Errorf("%v: %d fetches of /p, want %d:\n%s", tc.flags, got, tc.want, log)
		}
	}
}
