package experiments

import (
	"fmt"

	"github.com/layercrawl/layercrawl/crawl"
)

// DefaultOrderVariants are the orders RunOrder compares by default.
func DefaultOrderVariants() []OrderVariant {
	return []OrderVariant{{Name: "fifo", Order: "fifo"}}
}

// countsInlinks says whether an order counts in-links in a sketch.
func countsInlinks(order string) bool { return order == "inlinks" }

// configureOrder sets the crawl order of v in o.
func configureOrder(o *crawl.Options, v OrderVariant) error {
	if v.Order != "fifo" {
		return fmt.Errorf("%w: crawl order %q is not available in this build (want fifo)", ErrInvalidOptions, v.Order)
	}
	if v.SketchCounters != 0 {
		return fmt.Errorf("%w: variant %s: a sketch size needs an order that counts in-links", ErrInvalidOptions, v.Name)
	}
	return nil
}

// sketchNote is the report's paragraph on the count-min sketch's size.
func sketchNote(vs []OrderVariant) string {
	return "## The counting filter's size\n\nNo variant counts in-links in this build.\n\n"
}
