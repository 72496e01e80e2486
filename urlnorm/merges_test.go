package urlnorm

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEncodingMerges measures what the RFC 3986 encoding merges on
// the shared datasets: each URL's canonical form before the change (the
// slow reference applyPolicyPreRFC3986 of the policy-free parse, which gave
// the old Normalize's results on every URL of the sets) against
// Normalize's. It checks that the change only merges: the new canonical
// form is Normalize of the old one, so two URLs with one canonical form
// before still share one. By default it reads a 1-in-16 sample; with
// URLNORM_MERGES=1, every URL, and it logs the report of docs/BENCHMARKS.md:
//
//	URLNORM_MERGES=1 go test -count=1 -run '^TestEncodingMerges$' -v ./urlnorm/
func TestEncodingMerges(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(sharedPath(t, "datasets"), "*.txt.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.txt.gz in the shared datasets: %v", err)
	}
	step := 16
	if os.Getenv("URLNORM_MERGES") == "1" {
		step = 1
	}
	n := mustNew(t, Options{})
	exact := newExact(t)
	inputs := map[string]bool{}       // distinct valid inputs
	newOf := map[string]string{}      // old canonical form -> new
	inputsOf := map[string][]string{} // old canonical form -> its distinct inputs (the first few)
	countOf := map[string]int{}       // old canonical form -> number of distinct inputs
	changed := map[string]int{}       // per file: URLs whose canonical form the encoding changed
	byRule := map[string]int{}        // changed URLs per character the encoding now encodes
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txt.gz")
		forEachLine(t, path, step, func(line string) {
			got, err := n.Normalize(line)
			ex, exErr := exact.Normalize(line)
			if (err == nil) != (exErr == nil) {
				t.Fatalf("Normalize(%q) = %q, %v but the policy-free parse gives %q, %v", line, got, err, ex, exErr)
			}
			if err != nil || inputs[line] {
				return
			}
			inputs[line] = true
			old := applyPolicyPreRFC3986(ex)
			if want := applyPolicy(ex); got != want {
				t.Errorf("Normalize(%q) = %q; reference gives %q", line, got, want)
			}
			if again, err := n.Normalize(old); err != nil || again != got {
				t.Errorf("Normalize(%q) = %q, but Normalize of its old form %q gives %q, %v: the change splits instead of merging", line, got, old, again, err)
			}
			if got != old {
				changed[name]++
				for _, k := range newlyEncoded(old) {
					byRule[k]++
				}
			}
			newOf[old] = got
			countOf[old]++
			if len(inputsOf[old]) < 2 {
				inputsOf[old] = append(inputsOf[old], line)
			}
		})
	}
	if len(inputs) == 0 {
		t.Fatal("no URLs read")
	}
	oldForms := map[string][]string{} // new canonical form -> the old forms merged into it
	for old, nw := range newOf {
		oldForms[nw] = append(oldForms[nw], old)
	}
	var merged []string // new forms that two or more old forms now share
	mergedInputs, mergedOld := 0, 0
	for nw, olds := range oldForms {
		if len(olds) < 2 {
			continue
		}
		merged = append(merged, nw)
		mergedOld += len(olds)
		for _, o := range olds {
			mergedInputs += countOf[o]
		}
	}
	// Shortest first: the examples a person can read.
	slices.SortFunc(merged, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	total := 0
	for _, c := range changed {
		total += c
	}
	t.Logf("%d distinct valid URLs (every %d-th line of %d files); canonical URLs: %d before the RFC 3986 encoding, %d after (%d fewer)",
		len(inputs), step, len(files), len(newOf), len(oldForms), len(newOf)-len(oldForms))
	t.Logf("%d canonical URLs now each stand for 2 or more former ones (%d former canonical URLs, %d distinct inputs)", len(merged), mergedOld, mergedInputs)
	t.Logf("%d URLs have a different canonical form than before:", total)
	logCounts(t, changed)
	t.Logf("the changed URLs by what the encoding now encodes (a URL may count under several):")
	logCounts(t, byRule)
	t.Logf("the %d shortest merged canonical URLs and their former forms:", min(12, len(merged)))
	for i, nw := range merged {
		if i == 12 {
			t.Logf("  ... %d more", len(merged)-i)
			break
		}
		olds := oldForms[nw]
		slices.Sort(olds)
		t.Logf("  %s <- %q", nw, olds)
	}
}

// logCounts logs one line per key of m, in key order.
func logCounts(t *testing.T, m map[string]int) {
	t.Helper()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("  %7d %s", m[k], k)
	}
}

// newlyEncoded names what the RFC 3986 encoding changes in a canonical URL
// of the former policy: the raw bytes its path, query or kept fragment hold
// that RFC 3986 does not allow there (WHATWG left them as typed), and a '%'
// that starts no escape, each once.
func newlyEncoded(old string) []string {
	_, rest, _ := strings.Cut(old, "://")
	at := strings.IndexAny(rest, "/?#")
	if at < 0 {
		return nil
	}
	if i := strings.LastIndexByte(rest[:at], '@'); i >= 0 && strings.Contains(rest[:i], "%") {
		rest = rest[:i] + rest[at:] // a stray '%' in the userinfo counts too
	} else {
		rest = rest[at:]
	}
	where := "path"
	seen := map[string]bool{}
	var out []string
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c == '?' && where == "path":
			where = "query"
			continue
		case c == '#' && where != "fragment":
			where = "fragment"
			continue
		}
		var k string
		switch {
		case c == '%' && !(i+2 < len(rest) && isHex(rest[i+1]) && isHex(rest[i+2])):
			k = "stray '%'"
		case strings.IndexByte("[]|", c) >= 0, strings.IndexByte("^`{}\\", c) >= 0 && where != "path", c == '#' && where == "fragment":
			k = strconv.QuoteRune(rune(c)) + " in the " + where
		default:
			continue
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
