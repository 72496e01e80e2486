package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// replayCommand fetches the requests of a paths file (netbench run
// -paths-out), each host's in order on one kept-alive connection, hosts
// longest first on -concurrency workers, without parsing anything: the
// ideal time's schedule, run for real.
func replayCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("netbench replay", flag.ContinueOnError)
	pathsFile := fs.String("paths", "", "HOST<TAB>URI lines, as netbench run -paths-out writes them (required)")
	hostsFile := fs.String("hosts", os.Getenv("NETBENCH_HOSTS"), "file of the hosts' host:port, one per line")
	concurrency := fs.Int("concurrency", 16, "hosts fetched at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pathsFile == "" || *concurrency < 1 {
		return errors.New("netbench replay: need -paths and a concurrency of at least 1")
	}
	addrs, err := readHosts(*hostsFile)
	if err != nil {
		return err
	}
	plan, err := readPaths(*pathsFile)
	if err != nil {
		return err
	}
	type job struct {
		addr  string
		paths []string
	}
	var jobs []job
	for h, p := range plan {
		a, ok := addrs[h]
		if !ok {
			return fmt.Errorf("netbench replay: host %s is not in %s", h, *hostsFile)
		}
		jobs = append(jobs, job{a, p})
	}
	slices.SortFunc(jobs, func(a, b job) int { return cmp.Compare(len(b.paths), len(a.paths)) })
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true, ResponseHeaderTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	queue := make(chan job)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // protects firstErr and fetched
		firstErr error
		fetched  int
	)
	for range *concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				for _, p := range j.paths {
					err := fetchDrain(ctx, client, "http://"+j.addr+p)
					mu.Lock()
					fetched++
					if err != nil && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	wg.Wait()
	fmt.Fprintf(os.Stderr, "netbench replay: %d requests\n", fetched)
	return firstErr
}

// fetchDrain GETs url and reads its body to the end.
func fetchDrain(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("netbench replay: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("netbench replay: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("netbench replay: %s: %w", url, err)
	}
	return nil
}

// readHosts reads host:port lines into a map from host to host:port.
func readHosts(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("netbench replay: %w", err)
	}
	m := map[string]string{}
	for _, a := range strings.Fields(string(b)) {
		h, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("netbench replay: %s: %w", file, err)
		}
		m[h] = a
	}
	return m, nil
}

// readPaths reads HOST<TAB>URI lines into each host's URIs in order.
func readPaths(file string) (map[string][]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("netbench replay: %w", err)
	}
	defer f.Close()
	m := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		h, p, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("netbench replay: %s: bad line %q", file, sc.Text())
		}
		m[h] = append(m[h], p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("netbench replay: %w", err)
	}
	return m, nil
}
