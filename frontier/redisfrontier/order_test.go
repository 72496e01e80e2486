package redisfrontier

import (
	"errors"
	"testing"

	"github.com/layercrawl/layercrawl/frontier"
)

// The Redis frontier orders fifo only: inlinks is refused, not ignored.
func TestOrderInlinksRefused(t *testing.T) {
	o := Options{Seen: &Seen{}, Normalizer: testNormalizer(t), Order: frontier.OrderInlinks}
	o.EnsureDefaults()
	if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Validate with OrderInlinks = %v, want ErrInvalidOptions", err)
	}
	o.Order = frontier.OrderFIFO
	if err := o.Validate(); err != nil {
		t.Errorf("Validate with OrderFIFO = %v", err)
	}
}
