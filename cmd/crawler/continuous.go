package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/revisit"
)

// continuousFlags are the flags of a continuous crawl (--continuous) and
// of --max-time.
type continuousFlags struct {
	on      bool
	opts    crawl.ContinuousOptions
	set     []string // the --revisit-* and --budget flags given, for the usage error without --continuous
	maxTime time.Duration
}

// errMaxTime is the cause of a crawl stopped by --max-time.
var errMaxTime = errors.New("crawler: --max-time reached")

func (k *continuousFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&k.on, "continuous", false, "keep crawling: every fetched URL is fetched again when its revisit interval has passed (conditional requests; an unchanged page is archived as a WARC revisit record, and the log line says changed or unchanged), the interval adapting to how often the page was seen to change, within --revisit-min and --revisit-max and the --budget; the crawl runs until SIGINT/SIGTERM or --max-time and resumes from its state. A URL answered 404 or 410 three visits in a row leaves the schedule. With --redis every worker gives --continuous: the schedule, the last captures and the --budget are the whole crawl's, in Redis, and the seen-set there does not age (it keeps every URL ever discovered)")
	mark := func(name string) { k.set = append(k.set, "--"+name) }
	fs.Func("revisit-min", "with --continuous: shortest interval between two fetches of a URL (default 1m)", func(s string) error {
		mark("revisit-min")
		return parsePositiveDuration(s, &k.opts.Revisit.Min)
	})
	fs.Func("revisit-max", "with --continuous: longest interval between two fetches of a URL, even one never seen to change (default 24h)", func(s string) error {
		mark("revisit-max")
		return parsePositiveDuration(s, &k.opts.Revisit.Max)
	})
	fs.Func("revisit-policy", "with --continuous: how the revisit budget is spread: adaptive (the intervals that maximize the collection's freshness, Cho and Garcia-Molina: pages changing faster than the budget can follow are visited less; default), uniform (every page alike) or proportional (in proportion to its change rate)", func(s string) error {
		mark("revisit-policy")
		p, err := revisit.ParsePolicy(s)
		if err != nil {
			return err
		}
		k.opts.Revisit.Policy = p
		return nil
	})
	fs.Func("budget", "with --continuous: cap on the crawl's fetches, revisits and new URLs together, as N/s (or N/m, N/h; default: no cap); politeness applies as well, and the revisit schedule plans for it. With --redis it caps all the workers together (give each the same)", func(s string) error {
		mark("budget")
		r, err := parseRate(s)
		if err != nil {
			return err
		}
		k.opts.Budget = r
		return nil
	})
	durationVar(fs, &k.maxTime, "max-time", 0, "stop the crawl after this long, as SIGTERM would: fetches under way get --stop-grace, the state is saved and the same command resumes (0: no limit)")
}

// apply puts the continuous options into o, or says which flag needs
// --continuous.
func (k *continuousFlags) apply(o *crawl.Options) error {
	if !k.on {
		if len(k.set) > 0 {
			return fmt.Errorf("%w: %s only with --continuous", errUsage, strings.Join(k.set, ", "))
		}
		return nil
	}
	c := k.opts
	o.Continuous = &c
	return nil
}

// context returns ctx ending at --max-time, with errMaxTime as its cause.
func (k *continuousFlags) context(ctx context.Context) (context.Context, context.CancelFunc) {
	if k.maxTime <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, k.maxTime, errMaxTime)
}

func parsePositiveDuration(s string, p *time.Duration) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("%v is not positive", d)
	}
	*p = d
	return nil
}

// parseRate parses a rate as N/s, N/m or N/h (N alone: per second) into
// events per second.
func parseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), "/")
	per := 1.0
	switch unit {
	case "", "s":
	case "m", "min":
		per = 60
	case "h":
		per = 3600
	default:
		return 0, fmt.Errorf("%q: want N/s, N/m or N/h", s)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || !(n > 0) || n > 1e9 {
		return 0, fmt.Errorf("%q: want a positive number of fetches per second, minute or hour", s)
	}
	return n / per, nil
}
