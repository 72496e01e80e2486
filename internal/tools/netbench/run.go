package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// result is one run's line of the results file.
type result struct {
	Scenario, Label string
	Wall, User, Sys time.Duration
	Requests, Pages int
	Bytes           int64
	Ideal           time.Duration
	Load1           string // the 1-minute load average when the run started
	Exit            int
}

var resultHeader = []string{"scenario", "label", "wall_s", "user_s", "sys_s", "requests", "pages", "bytes", "ideal_s", "load1", "exit"}

func (r result) fields() []string {
	return []string{r.Scenario, r.Label, secs(r.Wall), secs(r.User), secs(r.Sys),
		fmt.Sprint(r.Requests), fmt.Sprint(r.Pages), fmt.Sprint(r.Bytes), secs(r.Ideal), r.Load1, fmt.Sprint(r.Exit)}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func runCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("netbench run", flag.ContinueOnError)
	var cfg Config
	fs.IntVar(&cfg.Hosts, "hosts", 100, "hosts of the synthetic web (0: none), at 127.1.1.1 and up")
	fs.IntVar(&cfg.Pages, "pages", 3000, "content pages of the synthetic web, over all hosts (Pareto sizes)")
	fs.IntVar(&cfg.MaxHostPages, "max-host-pages", 60, "most content pages of one synthetic host")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the web and of the hosts' round-trip times")
	fs.IntVar(&cfg.Port, "port", 0, "port of every host (0: a free one)")
	fs.DurationVar(&cfg.RTTMin, "rtt", 50*time.Millisecond, "round-trip time of each host (the least, with -rtt-max)")
	rttMax := fs.Duration("rtt-max", 0, "with it, each host's round-trip time is drawn uniformly from [-rtt, -rtt-max]")
	fs.DurationVar(&cfg.Jitter, "jitter", 5*time.Millisecond, "each direction's delay varies by up to half this either way")
	fs.Int64Var(&cfg.RateKB, "rate", 1000, "downstream bandwidth cap per connection in KB/s (0: none)")
	docs := fs.String("docs", "", "static sites as NAME=DIR,..., each one more host, at 127.0.2.1 and up")
	concurrency := fs.Int("concurrency", 16, "requests in flight over all hosts that the ideal time allows")
	delay := fs.Duration("delay", 0, "politeness delay per host that the ideal time allows between a host's requests")
	scenario := fs.String("scenario", "", "scenario name written to the results (required)")
	label := fs.String("label", "", "name of the crawler written to the results (required)")
	results := fs.String("results", "", "TSV file the run's line is appended to (required)")
	timeout := fs.Duration("timeout", 10*time.Minute, "the command is killed after this long")
	pathsOut := fs.String("paths-out", "", "file to write every answered request to, as HOST<TAB>URI lines in order (for netbench replay)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.RTTMax = max(*rttMax, cfg.RTTMin)
	if *scenario == "" || *label == "" || *results == "" || fs.NArg() == 0 {
		return errors.New("netbench run: need -scenario, -label, -results and a command after --")
	}
	for _, d := range strings.Split(*docs, ",") {
		if d == "" {
			continue
		}
		name, dir, ok := strings.Cut(d, "=")
		if !ok {
			return fmt.Errorf("netbench run: -docs %q is not NAME=DIR", d)
		}
		cfg.Docs = append(cfg.Docs, Doc{Name: name, Dir: dir})
	}

	dir, err := os.MkdirTemp("", "netbench-")
	if err != nil {
		return fmt.Errorf("netbench run: %w", err)
	}
	defer os.RemoveAll(dir)
	n, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer n.Close()
	var seeds, hosts strings.Builder
	for _, h := range n.Hosts() {
		fmt.Fprintln(&seeds, h.Seed)
		fmt.Fprintln(&hosts, h.Addr)
	}
	seedsFile, hostsFile := filepath.Join(dir, "seeds.txt"), filepath.Join(dir, "hosts.txt")
	work := filepath.Join(dir, "work")
	if err := errors.Join(os.WriteFile(seedsFile, []byte(seeds.String()), 0o644),
		os.WriteFile(hostsFile, []byte(hosts.String()), 0o644), os.Mkdir(work, 0o755)); err != nil {
		return fmt.Errorf("netbench run: %w", err)
	}

	r := result{Scenario: *scenario, Label: *label, Load1: load1()}
	cctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, fs.Arg(0), fs.Args()[1:]...)
	cmd.Env = append(os.Environ(), "NETBENCH_SEEDS="+seedsFile, "NETBENCH_HOSTS="+hostsFile, "NETBENCH_DIR="+work)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Its own process group, so that a timeout kills its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err = cmd.Run()
	r.Wall = time.Since(start)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.Exit = exitErr.ExitCode()
	default:
		return fmt.Errorf("netbench run: %w", err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		// wait4's usage: the command and every child it waited for.
		r.User = time.Duration(ru.Utime.Nano())
		r.Sys = time.Duration(ru.Stime.Nano())
	}
	stats := n.Stats()
	for _, s := range stats {
		r.Requests += s.Requests
		r.Pages += s.Pages
		r.Bytes += s.Bytes
	}
	r.Ideal = Ideal(stats, *concurrency, *delay)
	if *pathsOut != "" {
		if err := writePaths(*pathsOut, n.Paths()); err != nil {
			return err
		}
	}
	if err := appendResult(*results, r); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "netbench: %s %s: wall %.2fs (ideal %.2fs, %.2fx), cpu %.2fs, %d requests, %d pages, load %s, exit %d\n",
		r.Scenario, r.Label, r.Wall.Seconds(), r.Ideal.Seconds(), r.Wall.Seconds()/r.Ideal.Seconds(),
		(r.User + r.Sys).Seconds(), r.Requests, r.Pages, r.Load1, r.Exit)
	return nil
}

// appendResult appends r to the TSV file path, writing the header first
// if the file is new.
func appendResult(path string, r result) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("netbench run: %w", err)
	}
	var b strings.Builder
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		b.WriteString(strings.Join(resultHeader, "\t") + "\n")
	}
	b.WriteString(strings.Join(r.fields(), "\t") + "\n")
	_, err = f.WriteString(b.String())
	return errors.Join(err, f.Close())
}

// writePaths writes paths as HOST<TAB>URI lines, hosts in name order.
func writePaths(file string, paths map[string][]string) error {
	var b strings.Builder
	for _, h := range slices.Sorted(maps.Keys(paths)) {
		for _, p := range paths[h] {
			fmt.Fprintf(&b, "%s\t%s\n", h, p)
		}
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("netbench run: %w", err)
	}
	return nil
}

// load1 returns the 1-minute load average, or "?".
func load1() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
