package crawl

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestLatencyBuckets(t *testing.T) {
	var l latency
	for _, d := range []time.Duration{-time.Second, 0, 100 * time.Microsecond, 101 * time.Microsecond, 30 * time.Millisecond, 50 * time.Millisecond, time.Minute} {
		l.observe(d)
	}
	s := l.stats()
	if s.Count != 7 || s.Max != time.Minute {
		t.Errorf("count %d, max %v; want 7, 1m", s.Count, s.Max)
	}
	// Cumulative: <=100µs holds -1s (as 0), 0 and 100µs; <=250µs adds
	// 101µs; <=50ms adds 30ms and 50ms; a minute is above every bound.
	want := []uint64{3, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6}
	if !slices.Equal(s.Buckets, want) {
		t.Errorf("buckets %v, want %v", s.Buckets, want)
	}
	if wantSum := 100*time.Microsecond + 101*time.Microsecond + 80*time.Millisecond + time.Minute; s.Sum != wantSum {
		t.Errorf("sum %v, want %v", s.Sum, wantSum)
	}
}

func TestLatencyConcurrentMax(t *testing.T) {
	var l latency
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				l.observe(time.Duration(g*1000+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	if s := l.stats(); s.Count != 8000 || s.Max != 7999*time.Microsecond {
		t.Errorf("count %d, max %v; want 8000, 7.999ms", s.Count, s.Max)
	}
}

// TestDoneBucketsIsACopy checks that a caller that changes or appends to
// the bounds it was given changes neither the bounds nor the histogram.
func TestDoneBucketsIsACopy(t *testing.T) {
	want := DoneBuckets()
	b := DoneBuckets()
	b[0] = time.Hour
	b = append(b, time.Hour)
	if got := DoneBuckets(); !slices.Equal(got, want) || !slices.IsSorted(got) {
		t.Errorf("bounds after a caller changed its copy: %v, want %v", got, want)
	}
	var l latency
	l.observe(time.Hour)
	if s := l.stats(); len(s.Buckets) != len(want) || s.Count != 1 {
		t.Errorf("%d buckets, count %d; want %d, 1 (%d appended)", len(s.Buckets), s.Count, len(want), len(b))
	}
}
