package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// startTinyproxy runs Debian's tinyproxy on a free loopback port with its
// own configuration, requiring Basic authentication user:pass, and returns
// its URL (without credentials) and the path of its log. It is required
// under CI=true.
func startTinyproxy(t *testing.T) (*url.URL, string) {
	t.Helper()
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		for _, p := range []string{"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tinyproxy is required under CI=true (apt-get install tinyproxy): %v", err)
		}
		t.Skip("tinyproxy not installed (Debian package tinyproxy)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "tinyproxy.log")
	conf := fmt.Sprintf(`Port %d
Listen 127.0.0.1
Timeout 30
MaxClients 20
LogFile "%s"
LogLevel Info
PidFile "%s"
Allow 127.0.0.1
BasicAuth user pass
DisableViaHeader Yes
`, port, logPath, filepath.Join(dir, "tinyproxy.pid"))
	confPath := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-d", "-c", confPath) // -d: stay in the foreground
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy did not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &url.URL{Scheme: "http", Host: addr}, logPath
}

// TestProxy fetches pages, robots.txt and a sitemap-sized body through a
// real forward proxy, for http:// (absolute form) and https:// (CONNECT)
// origins: the proxy's log lists every fetch, and RawResponse is the
// origin's response, never the proxy's reply to CONNECT.
func TestProxy(t *testing.T) {
	proxyURL, logPath := startTinyproxy(t)
	const together = DefaultMaxConnsPerHost + 2
	var arrived atomic.Int32
	allIn := make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/together" {
			// Answers once `together` requests are in flight at once.
			if arrived.Add(1) == together {
				close(allIn)
			}
			select {
			case <-allIn:
			case <-time.After(3 * time.Second):
				w.WriteHeader(http.StatusGatewayTimeout)
				return
			}
		}
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Errorf("the origin received Proxy-Authorization")
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Origin", "yes")
		fmt.Fprintf(w, "origin says %s", r.URL.Path)
	})
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	secure := httptest.NewUnstartedServer(handler)
	secure.Config.ErrorLog = log.New(io.Discard, "", 0)
	secure.StartTLS()
	t.Cleanup(secure.Close)
	pool := x509.NewCertPool()
	pool.AddCert(secure.Certificate())

	withAuth := *proxyURL
	withAuth.User = url.UserPassword("user", "pass")
	f := newTestFetcher(t, Options{Proxy: &withAuth, TLSConfig: &tls.Config{RootCAs: pool}})
	for _, base := range []string{plain.URL, secure.URL} {
		for _, path := range []string{"/page", "/robots.txt"} {
			u := base + path
			var res *Result
			var err error
			if path == "/robots.txt" {
				_, res, err = f.FetchRobots(context.Background(), base+"/x")
			} else {
				res, err = f.Fetch(context.Background(), u)
			}
			if err != nil {
				t.Fatalf("%s: %v", u, err)
			}
			raw := string(res.RawResponse)
			if !strings.HasPrefix(raw, "HTTP/1.1 200 OK\r\n") || !strings.Contains(raw, "\r\nX-Origin: yes\r\n") ||
				!strings.HasSuffix(raw, "origin says "+path) || strings.Contains(raw, "Connection established") {
				t.Errorf("%s: RawResponse %q, want the origin's response alone", u, raw)
			}
			if res.RemoteAddr.String() != proxyURL.Host {
				t.Errorf("%s: connected to %v, want the proxy %s", u, res.RemoteAddr, proxyURL.Host)
			}
			if strings.HasPrefix(base, "https") {
				if res.TLS == nil || !strings.HasPrefix(string(res.RawRequest), "GET "+path+" HTTP/1.1\r\n") {
					t.Errorf("%s: TLS %v, request %q: want the origin's TLS and an origin-form request", u, res.TLS, res.RawRequest)
				}
			} else if !strings.HasPrefix(string(res.RawRequest), "GET "+u+" HTTP/1.1\r\n") || !strings.Contains(string(res.RawRequest), "\r\nProxy-Authorization: Basic ") {
				t.Errorf("%s: request %q, want absolute form with Proxy-Authorization", u, res.RawRequest)
			}
		}
	}
	// The proxy's connections are not capped per host: more than
	// MaxConnsPerHost http:// fetches go through it at once.
	var wg sync.WaitGroup
	for range together {
		wg.Go(func() {
			res, err := f.Fetch(context.Background(), plain.URL+"/together")
			if err != nil {
				t.Errorf("concurrent fetch through the proxy: %v", err)
			} else if res.Status != http.StatusOK {
				t.Errorf("concurrent fetch through the proxy: status %d, want %d fetches in flight at once", res.Status, together)
			}
		})
	}
	wg.Wait()
	f.Close()

	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"GET " + plain.URL + "/page",
		"GET " + plain.URL + "/robots.txt",
		"CONNECT " + strings.TrimPrefix(secure.URL, "https://"),
	} {
		if !strings.Contains(string(logged), want) {
			t.Errorf("the proxy's log does not list %q:\n%s", want, logged)
		}
	}

	// Without credentials the proxy refuses: 407 for http (a result), a
	// refused tunnel for https (an error naming the proxy's answer).
	anon := newTestFetcher(t, Options{Proxy: proxyURL, TLSConfig: &tls.Config{RootCAs: pool}})
	res, err := anon.Fetch(context.Background(), plain.URL+"/page")
	if err != nil || res.Status != http.StatusProxyAuthRequired {
		t.Errorf("http without credentials: %v, %v; want a 407 result", res, err)
	}
	_, err = anon.Fetch(context.Background(), secure.URL+"/page")
	var pe *ProxyError
	if KindOf(err) != KindConnect || !errors.As(err, &pe) || !strings.HasPrefix(pe.Status, "407") {
		t.Errorf("https without credentials: %v; want a connect error with the proxy's 407", err)
	}

	// The address policy still applies to the targets, which the crawler
	// resolves: without AllowPrivate the loopback origins are refused, the
	// proxy itself (also on loopback) is not.
	strict, err := New(Options{Proxy: &withAuth})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	for _, u := range []string{plain.URL + "/page", secure.URL + "/page"} {
		_, err := strict.Fetch(context.Background(), u)
		wantKind(t, err, KindBlockedAddress)
		wantReadOnce(t, err, u)
	}
}

func TestProxyOptionValidate(t *testing.T) {
	for _, p := range []string{"https://p:3128", "socks5://p:1080", "http://", "http://p:3128/path"} {
		u, err := url.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("u", "secret")
		_, err = New(Options{Proxy: u})
		if err == nil {
			t.Errorf("Proxy %s accepted", p)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%v: the proxy password is shown", err)
		}
	}
}
