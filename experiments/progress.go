package experiments

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress draws a progress bar on a terminal stream (stderr), redrawn in
// place with a carriage return at most every Interval. A nil *Progress
// accepts every call and draws nothing. It is safe for concurrent use.
type Progress struct {
	mu       sync.Mutex // protects the fields below and writes to w
	w        io.Writer
	total    int64
	done     int64
	label    string
	start    time.Time
	last     time.Time
	interval time.Duration
	now      func() time.Time
}

// NewProgress returns a bar for total units of work drawn on w.
func NewProgress(w io.Writer, total int64) *Progress {
	now := time.Now
	return &Progress{w: w, total: total, start: now(), interval: 200 * time.Millisecond, now: now}
}

// SetLabel sets the text printed after the bar (the structure measured).
func (p *Progress) SetLabel(label string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

// Add records n more units done and redraws if the interval has passed.
func (p *Progress) Add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if t := p.now(); t.Sub(p.last) >= p.interval {
		p.last = t
		p.draw(t)
	}
}

// Finish draws the final state and ends the line.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(p.now())
	fmt.Fprintln(p.w)
}

const barWidth = 30

func (p *Progress) draw(t time.Time) {
	frac := 1.0
	if p.total > 0 {
		frac = min(1, float64(p.done)/float64(p.total))
	}
	filled := int(frac * barWidth)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled)
	elapsed := t.Sub(p.start).Round(100 * time.Millisecond)
	// The trailing spaces wipe a longer label drawn before.
	fmt.Fprintf(p.w, "\r[%s] %5.1f%% %8s %-40s", bar, 100*frac, elapsed, p.label)
}
