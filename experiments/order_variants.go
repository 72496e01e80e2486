package experiments

import (
	"fmt"

	"github.com/layercrawl/layercrawl/crawl"
	"github.com/layercrawl/layercrawl/frontier"
)

// DefaultOrderVariants are the orders RunOrder compares by default: fifo,
// inlinks with the crawl's default sketch (sized for 10 million URLs), and
// inlinks with the smallest sketch --expected-urls gives (8,192 URLs: 4 ×
// 1,024 counters).
func DefaultOrderVariants() []OrderVariant {
	return []OrderVariant{
		{Name: "fifo", Order: "fifo"},
		{Name: "inlinks", Order: "inlinks"},
		{Name: "inlinks:8192", Order: "inlinks", ExpectedURLs: 8192},
	}
}

// countsInlinks says whether an order counts in-links in a sketch.
func countsInlinks(order string) bool { return order == frontier.OrderInlinks.String() }

// configureOrder sets the crawl order of v in o.
func configureOrder(o *crawl.Options, v OrderVariant) error {
	ord, err := frontier.ParseOrder(v.Order)
	if err != nil {
		return fmt.Errorf("%w: variant %s: %v", ErrInvalidOptions, v.Name, err)
	}
	o.Order = ord
	if v.ExpectedURLs > 0 {
		o.ExpectedURLs = v.ExpectedURLs
	}
	return nil
}

// sketchShape describes the in-link sketch a variant's crawl of budget
// pages gets.
func sketchShape(v OrderVariant, budget int) string {
	if !countsInlinks(v.Order) {
		return "-"
	}
	n := v.ExpectedURLs
	if n == 0 {
		n = crawl.DefaultExpectedURLs
	}
	rows, width := frontier.InlinksSketchShape(n, int64(budget))
	return fmt.Sprintf("%d × %d (%d KiB)", rows, width, 4*rows*width/1024)
}

// sketchNote is the report's paragraph on the count-min sketch's size.
func sketchNote(vs []OrderVariant, budget int) string {
	s := "## The counting filter's size\n\n" +
		"The crawl sizes its in-link sketch from --expected-urls, or from --max-pages × 100 when less (crawl.Options.ExpectedURLs and MaxPages, frontier.InlinksSketchShape: 4 rows of the power of two at least expected/8 counters, at least 1,024); " +
		"the crawl exposes no other knob for it, so a variant with a smaller sketch sets --expected-urls, which also sizes the duplicate filter's first generation (it grows past it, so no URL is lost, at some CPU). " +
		"A sketch only overestimates: a rarely linked URL that shares its counters with popular ones looks popular and is fetched early, in place of a truly popular one. " +
		"The simulation above isolates that effect (same order, only the counts differ); the crawls (inlinks against the variants with a smaller --expected-urls, in the first table) measure it in the crawler.\n\n"
	for _, v := range vs {
		if countsInlinks(v.Order) {
			s += fmt.Sprintf("- %s: sketch %s.\n", v.Name, sketchShape(v, budget))
		}
	}
	return s + "\n"
}
