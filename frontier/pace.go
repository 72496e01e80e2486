package frontier

import "time"

// Adaptive politeness (docs/RESILIENCE.md). After each request a host waits
//
//	max(Delay, Crawl-delay, min(DelayFactor × the request's time, MaxDelay), throttle)
//
// where throttle is 0 until the host answers 429 or 503, then doubles
// with each such answer (from twice the rest of the delay, at least
// throttleFloor) up to MaxDelay, and halves with each other answer until
// it falls to the rest of the delay and is dropped. A slow host is so
// asked less often (Heritrix's delay factor, Scrapy's AutoThrottle) and a
// host that says it is overloaded is backed off exponentially.

// throttleFloor is the least delay a throttling answer sets, so that a
// crawl without a politeness delay (Delay negative) still backs off.
const throttleFloor = 250 * time.Millisecond

// AdaptiveDelay returns the wait after a request whose outcome is out, given the
// host's current throttle, and the throttle to keep.
func (o *PolitenessOptions) AdaptiveDelay(throttle time.Duration, out Outcome) (delay, newThrottle time.Duration) {
	delay = o.HostDelay(out.CrawlDelay)
	if o.MaxDelay < 0 {
		return delay, 0
	}
	// Delay negative asks for no delay between requests: the response-time
	// factor, a delay of the crawler's own choosing, is off with it (a
	// server's 429 or 503 still slows its host down).
	if o.DelayFactor > 0 && o.Delay >= 0 && out.Elapsed > 0 {
		adaptive := time.Duration(min(o.DelayFactor*float64(out.Elapsed), float64(o.MaxDelay)))
		delay = max(delay, adaptive)
	}
	switch {
	case out.Throttled:
		throttle = min(max(2*throttle, 2*delay, throttleFloor), max(o.MaxDelay, delay))
	case throttle > 0:
		throttle /= 2
		if throttle <= delay {
			throttle = 0
		}
	}
	return max(delay, throttle), throttle
}

// paceLocked returns h's delay after a request whose outcome is out and
// updates h's throttle.
func (f *Frontier) paceLocked(h *host, out Outcome) time.Duration {
	if !out.Fetched {
		return f.opts.Politeness.HostDelay(out.CrawlDelay)
	}
	if out.Throttled {
		f.cThrottled.Add(1)
	}
	delay, throttle := f.opts.Politeness.AdaptiveDelay(h.throttle, out)
	if h.throttle == 0 && throttle > 0 {
		f.cSlowed.Add(1)
	}
	h.throttle = throttle
	return delay
}
