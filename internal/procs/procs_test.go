package procs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestStep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int
		cores []float64 // used in each interval
		want  []int     // the setting after each
	}{
		{"idle", 4, []float64{0.1, 0.5, 0.85}, []int{1, 1, 1}},
		{"one busy interval is a burst", 4, []float64{0.95, 0.5, 0.95, 0.2}, []int{1, 1, 1, 1}},
		{"two busy intervals double", 4, []float64{0.95, 0.95}, []int{1, 2}},
		{"busy on doubles again", 8, []float64{1, 1, 1.9, 3.8, 7.5}, []int{1, 2, 4, 8, 8}},
		{"up to Max", 3, []float64{1, 1, 2, 2.9}, []int{1, 2, 3, 3}},
		{"Max 1", 1, []float64{1, 1, 1}, []int{1, 1, 1}},
		// At 2 Ps, 0.85 cores fit in one at 90%: down to one.
		{"down when one fewer would do", 2, []float64{1, 1, 0.85, 0.85}, []int{1, 2, 1, 1}},
		{"kept when one fewer would be busy", 2, []float64{1, 1, 1.2, 0.95}, []int{1, 2, 2, 2}},
		// 4 Ps using 2 cores: 2 < 0.9*3, so 3; then 2 > 0.9*2, so 3 stays.
		{"down one at a time", 4, []float64{1, 1, 1.9, 2, 2}, []int{1, 2, 4, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Governor{Max: tc.max, procs: 1}
			var got []int
			for _, c := range tc.cores {
				g.procs = g.step(c)
				got = append(got, g.procs)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("cores %v: settings %v, want %v", tc.cores, got, tc.want)
			}
		})
	}
}

// fakeCPU is a process whose CPU time grows at a set number of cores, on a
// clock that moves a second each time the governor reads it, and whose
// GOMAXPROCS setting is recorded. So each interval the governor sees used
// exactly the rate set when it ended, however the test is scheduled.
type fakeCPU struct {
	mu    sync.Mutex
	rate  float64 // cores in use
	clock time.Time
	used  time.Duration
	at    time.Time // the clock at the last CPU time read
	procs int
	sets  []int
	set   chan int // each setting, as it is made
}

func newFakeCPU(procs int) *fakeCPU {
	start := time.Unix(1e9, 0)
	return &fakeCPU{clock: start, at: start, procs: procs, set: make(chan int, 100)}
}

func (f *fakeCPU) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = f.clock.Add(time.Second)
	return f.clock
}

func (f *fakeCPU) cpuTime() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used += time.Duration(f.rate * float64(f.clock.Sub(f.at)))
	f.at = f.clock
	return f.used, nil
}

func (f *fakeCPU) setRate(r float64) {
	f.mu.Lock()
	f.rate = r
	f.mu.Unlock()
}

func (f *fakeCPU) setProcs(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.procs
	f.procs = n
	f.sets = append(f.sets, n)
	f.set <- n
	return prev
}

// waitFor reads settings until want, failing after a while.
func (f *fakeCPU) waitFor(t *testing.T, want int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n := <-f.set:
			if n == want {
				return
			}
		case <-timeout:
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("no setting of %d; settings so far %v", want, f.sets)
		}
	}
}

func TestRun(t *testing.T) {
	f := newFakeCPU(8)
	var changes []int
	g := &Governor{Max: 4, Interval: time.Millisecond, Set: f.setProcs, CPUTime: f.cpuTime,
		OnChange: func(p int, used float64) { changes = append(changes, p) }, now: f.now}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	f.waitFor(t, 1) // the start

	f.setRate(4) // CPU-bound: doubles to the maximum
	f.waitFor(t, 2)
	f.waitFor(t, 4)
	f.setRate(0.2) // then nearly idle: one P at a time down to one
	f.waitFor(t, 3)
	f.waitFor(t, 2)
	f.waitFor(t, 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []int{1, 2, 4, 3, 2, 1, 8}; !slices.Equal(f.sets, want) {
		t.Errorf("settings %v, want %v (the last restores the setting found)", f.sets, want)
	}
	if want := []int{2, 4, 3, 2, 1}; !slices.Equal(changes, want) {
		t.Errorf("OnChange saw %v, want %v", changes, want)
	}
}

func TestRunUnreadableCPUTime(t *testing.T) {
	f := newFakeCPU(8)
	errNo := errors.New("no CPU time here")
	g := &Governor{Max: 4, Set: f.setProcs, CPUTime: func() (time.Duration, error) { return 0, errNo }}
	if err := g.Run(context.Background()); !errors.Is(err, errNo) {
		t.Fatalf("Run = %v, want %v", err, errNo)
	}
	if len(f.sets) != 0 {
		t.Errorf("settings %v, want none", f.sets)
	}
}

func TestCPUTime(t *testing.T) {
	a, err := CPUTime()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the count moves (its resolution is a clock tick at
	// worst), for at most a second of wall time.
	x := uint64(1)
	for start := time.Now(); time.Since(start) < time.Second; {
		for i := 0; i < 1_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		b, err := CPUTime()
		if err != nil {
			t.Fatal(err)
		}
		if b > a {
			return
		}
	}
	t.Errorf("CPU time stayed at %v after a second of spinning (%d)", a, x)
}
