package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "crawl.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func parseTestArgs(t *testing.T, args ...string) (crawlCommand, []string, error) {
	t.Helper()
	var c crawlCommand
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	crawlFlags(fs, &c)
	fs.String("config", "", "")
	urls, err := parseCrawlArgs(fs, args)
	return c, urls, err
}

func TestConfigFile(t *testing.T) {
	cfg := writeConfig(t, `
# a crawl of two sites
urls = ["https://a.example/", "https://b.example/docs/"]
out = "crawl-out"
concurrency = 4
delay = "250ms"
max-depth = -1
fp-target = 0.0001
allow-private = true
deny = ['\.pdf$', '/private/']
`)
	c, urls, err := parseTestArgs(t, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := c.opts
	if !slices.Equal(urls, []string{"https://a.example/", "https://b.example/docs/"}) || o.Dir != "crawl-out" ||
		o.Concurrency != 4 || o.Politeness.Delay != 250*time.Millisecond || o.Admission.MaxDepth != -1 ||
		o.FalsePositiveRate != 0.0001 || !o.Fetch.AllowPrivate || len(o.Admission.Deny) != 2 {
		t.Errorf("config not applied: urls %v, options %+v", urls, o)
	}

	// Flags override the file, lists included; URL arguments replace its urls.
	c, urls, err = parseTestArgs(t, "--config="+cfg, "--concurrency", "8", "--deny", "/tmp/", "--delay", "-1", "https://c.example/")
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Concurrency != 8 || len(c.opts.Admission.Deny) != 1 || c.opts.Admission.Deny[0].String() != "/tmp/" ||
		c.opts.Politeness.Delay != -1 || !slices.Equal(urls, []string{"https://c.example/"}) || c.opts.Dir != "crawl-out" {
		t.Errorf("command line did not override the file: urls %v, concurrency %d, deny %v, delay %v",
			urls, c.opts.Concurrency, c.opts.Admission.Deny, c.opts.Politeness.Delay)
	}
}

// TestDelayZero: --delay 0 (or 0s, or delay = "0s" in a config file)
// means no delay, as a user who writes it expects, not the library's
// default that a zero Politeness.Delay stands for.
func TestDelayZero(t *testing.T) {
	for _, v := range []string{"0", "0s", "-1", "0ms"} {
		c, _, err := parseTestArgs(t, "--out", t.TempDir(), "--delay", v, "https://a.example/")
		if err != nil {
			t.Fatal(err)
		}
		if got := c.opts.Politeness.Delay; got >= 0 {
			t.Errorf("--delay %s: Politeness.Delay %v, want negative (none)", v, got)
		}
	}
	cfg := filepath.Join(t.TempDir(), "crawl.toml")
	if err := os.WriteFile(cfg, []byte("urls = [\"https://a.example/\"]\nout = \"o\"\ndelay = \"0s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, err := parseTestArgs(t, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.opts.Politeness.Delay; got >= 0 {
		t.Errorf("delay = \"0s\" in a config file: Politeness.Delay %v, want negative (none)", got)
	}
	c, _, err = parseTestArgs(t, "--out", t.TempDir(), "https://a.example/")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.opts.Politeness.Delay; got != time.Second {
		t.Errorf("no --delay: Politeness.Delay %v, want the 1s default", got)
	}
}

func TestConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"concurency = 4", `unknown key "concurency" (did you mean "concurrency"?)`},
		{"concurrency = \"many\"", "concurrency"},
		{"delay = 5", "needs a unit"},
		{"concurrency = [1, 2]", "takes one value"},
		{"[redis]\nurl = \"x\"", "without tables"},
		{"urls = \"https://a.example/\"", "list of URLs"},
		{"config = \"other.toml\"", `unknown key "config"`},
		{"out = ", "crawl.toml"},
	} {
		_, _, err := parseTestArgs(t, "--config", writeConfig(t, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: error %v, want it to mention %q", tc.text, err, tc.want)
		}
	}
	if _, _, err := parseTestArgs(t, "--config", filepath.Join(t.TempDir(), "absent.toml")); err == nil {
		t.Error("a missing config file was accepted")
	}
}

// The example config shipped with the repository parses.
func TestShippedConfig(t *testing.T) {
	c, urls, err := parseTestArgs(t, "--config", "../../examples/crawl.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(urls) == 0 || c.opts.Dir == "" {
		t.Errorf("examples/crawl.toml: urls %v, out %q", urls, c.opts.Dir)
	}
}

// The capture flags (requisites, sitemaps, hop limits) map onto crawl.Options, from the command line and from
// a config file.
func TestCaptureFlags(t *testing.T) {
	c, _, err := parseTestArgs(t, "--no-embeds", "--max-embed-hops", "-1", "--no-sitemaps",
		"--sitemap-max-urls", "100", "--sitemap-max-bytes", "4096")
	if err != nil {
		t.Fatal(err)
	}
	o := c.opts
	if !o.Fetch.NoEmbeds || o.Admission.MaxEmbedHops != -1 || !o.NoSitemaps || o.Sitemap.MaxURLs != 100 || o.Sitemap.MaxBytes != 4096 {
		t.Errorf("flags not applied: NoEmbeds %v, MaxEmbedHops %d, NoSitemaps %v, Sitemap %+v",
			o.Fetch.NoEmbeds, o.Admission.MaxEmbedHops, o.NoSitemaps, o.Sitemap)
	}
	c, _, err = parseTestArgs(t, "--config", writeConfig(t, "no-sitemaps = true\nmax-embed-hops = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.opts.NoSitemaps || c.opts.Admission.MaxEmbedHops != 3 || c.opts.Fetch.NoEmbeds {
		t.Errorf("config not applied: NoSitemaps %v, MaxEmbedHops %d, NoEmbeds %v", c.opts.NoSitemaps, c.opts.Admission.MaxEmbedHops, c.opts.Fetch.NoEmbeds)
	}
	// The defaults: requisites and sitemaps on.
	c, _, err = parseTestArgs(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Fetch.NoEmbeds || c.opts.NoSitemaps || c.opts.Admission.MaxEmbedHops != 2 {
		t.Errorf("defaults: NoEmbeds %v, NoSitemaps %v, MaxEmbedHops %d", c.opts.Fetch.NoEmbeds, c.opts.NoSitemaps, c.opts.Admission.MaxEmbedHops)
	}
}
