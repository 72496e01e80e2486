// Command purellcmd is the baseline for "crawler normalize" in
// docs/BENCHMARKS.md: the same stdin-to-stdout loop (bufio, one line out per
// line in, ERROR<TAB>reason on failure) with purell v1.2.1's
// NormalizeURLString(FlagsSafe|FlagRemoveDotSegments|FlagRemoveFragment) in
// place of urlnorm. It is a measurement tool, not part of the crawler.
package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/PuerkitoBio/purell"
)

func main() {
	const flags = purell.FlagsSafe | purell.FlagRemoveDotSegments | purell.FlagRemoveFragment
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	for sc.Scan() {
		out, err := purell.NormalizeURLString(sc.Text(), flags)
		if err != nil {
			fmt.Fprintf(w, "ERROR\t%v\n", err)
			continue
		}
		w.WriteString(out)
		w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "purellcmd:", err)
		w.Flush()
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "purellcmd:", err)
		os.Exit(1)
	}
}
