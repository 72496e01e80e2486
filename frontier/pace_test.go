package frontier

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestAdaptiveDelay(t *testing.T) {
	o := PolitenessOptions{Delay: time.Second, MaxCrawlDelay: 30 * time.Second, DelayFactor: 2, MaxDelay: time.Minute}
	ms := time.Millisecond
	for _, tc := range []struct {
		name         string
		o            PolitenessOptions
		throttle     time.Duration
		out          Outcome
		delay, after time.Duration
	}{
		{"fast host: Delay", o, 0, Outcome{Elapsed: 10 * ms}, time.Second, 0},
		{"no delay: no factor", PolitenessOptions{Delay: -1, MaxCrawlDelay: 30 * time.Second, DelayFactor: 2, MaxDelay: time.Minute}, 0, Outcome{Elapsed: 2 * time.Second}, 0, 0},
		{"slow host: factor", o, 0, Outcome{Elapsed: 2 * time.Second}, 4 * time.Second, 0},
		{"factor capped", o, 0, Outcome{Elapsed: time.Hour}, time.Minute, 0},
		{"Crawl-delay wins", o, 0, Outcome{Elapsed: time.Second, CrawlDelay: 5 * time.Second}, 5 * time.Second, 0},
		{"first 429: twice the delay", o, 0, Outcome{Throttled: true}, 2 * time.Second, 2 * time.Second},
		{"second 429: doubles", o, 2 * time.Second, Outcome{Throttled: true}, 4 * time.Second, 4 * time.Second},
		{"429 capped", o, 40 * time.Second, Outcome{Throttled: true}, time.Minute, time.Minute},
		{"success halves", o, 8 * time.Second, Outcome{}, 4 * time.Second, 4 * time.Second},
		{"decayed back", o, 2 * time.Second, Outcome{}, time.Second, 0},
		{"no Delay: floor", PolitenessOptions{Delay: -1, DelayFactor: 2, MaxDelay: time.Minute}, 0, Outcome{Throttled: true}, throttleFloor, throttleFloor},
		{"factor off", PolitenessOptions{Delay: time.Second, DelayFactor: -1, MaxDelay: time.Minute}, 0, Outcome{Elapsed: time.Hour}, time.Second, 0},
		{"adaptive off", PolitenessOptions{Delay: time.Second, DelayFactor: 2, MaxDelay: -1}, 4 * time.Second, Outcome{Elapsed: time.Hour, Throttled: true}, time.Second, 0},
		{"cap below Crawl-delay", PolitenessOptions{Delay: time.Second, MaxCrawlDelay: time.Hour, DelayFactor: 2, MaxDelay: time.Second}, 0, Outcome{CrawlDelay: 10 * time.Second, Throttled: true}, 10 * time.Second, 10 * time.Second},
	} {
		delay, after := tc.o.AdaptiveDelay(tc.throttle, tc.out)
		if delay != tc.delay || after != tc.after {
			t.Errorf("%s: AdaptiveDelay(%v, %+v) = %v, %v; want %v, %v", tc.name, tc.throttle, tc.out, delay, after, tc.delay, tc.after)
		}
	}
	// Doubling is bounded whatever the number of 429s.
	var th time.Duration
	for range 100 {
		_, th = o.AdaptiveDelay(th, Outcome{Throttled: true})
	}
	if th != o.MaxDelay {
		t.Errorf("after 100 answers 429 the throttle is %v, want the cap %v", th, o.MaxDelay)
	}
	for range 10 {
		_, th = o.AdaptiveDelay(th, Outcome{})
	}
	if th != 0 {
		t.Errorf("after 10 successes the throttle is %v, want 0", th)
	}
}

// TestThrottledHostSlowed checks that a host answering 429 waits longer
// before its next entry while another host is served at its normal pace,
// and that the frontier counts it.
func TestThrottledHostSlowed(t *testing.T) {
	clk := &manualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := openTest(t, Options{Now: clk.now, Politeness: PolitenessOptions{Delay: time.Second, DelayFactor: 2, MaxDelay: time.Minute}})
	ctx := context.Background()
	if _, err := f.AddSeeds(ctx, []string{"http://a.test/1", "http://a.test/2", "http://b.test/1", "http://b.test/2"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e := nextNow(t, f)
		out := Outcome{Fetched: true, Throttled: e.host == "a.test"}
		if err := f.ReleaseOutcome(e, out); err != nil {
			t.Fatal(err)
		}
		if err := f.Done(ctx, e, out); err != nil {
			t.Fatal(err)
		}
	}
	if s := f.Stats(); s.Slowed != 1 || s.EverSlowed != 1 || s.Throttled != 1 ||
		len(s.SlowedHosts) != 1 || s.SlowedHosts[0] != (SlowedHost{Host: "a.test", Delay: 2 * time.Second}) {
		t.Errorf("stats %+v, want a.test slowed to 2s", s)
	}
	clk.t = clk.t.Add(time.Second)
	if e := nextNow(t, f); e.URL != "http://b.test/2" {
		t.Fatalf("after 1s: %s, want b.test/2 (a.test waits 2s)", e.URL)
	} else if err := f.Done(ctx, e, Outcome{Fetched: true}); err != nil {
		t.Fatal(err)
	}
	nextWaits(t, f)
	clk.t = clk.t.Add(time.Second)
	if e := nextNow(t, f); e.URL != "http://a.test/2" {
		t.Fatalf("after 2s: %s, want a.test/2", e.URL)
	}
}

func TestTopSlowed(t *testing.T) {
	var top []SlowedHost
	for i := range 25 {
		top = topSlowed(top, SlowedHost{Host: fmt.Sprintf("h%02d", i), Delay: time.Duration(i%7) * time.Second})
	}
	if len(top) != MaxSlowedHosts {
		t.Fatalf("%d hosts, want %d", len(top), MaxSlowedHosts)
	}
	// Delays 6s (h06, h13, h20), 5s (h05, h12, h19), 4s (h04, h11, h18), 3s (h03).
	want := []string{"h06", "h13", "h20", "h05", "h12", "h19", "h04", "h11", "h18", "h03"}
	for i, h := range top {
		if h.Host != want[i] {
			t.Errorf("top[%d] = %v, want %s", i, h, want[i])
		}
	}
}
