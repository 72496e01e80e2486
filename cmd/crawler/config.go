package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// configURLs is the key of a config file that lists seed URLs, the
// arguments of the command line.
const configURLs = "urls"

// findConfigFlag returns the value of --config (or -config) in args, ""
// when absent; fs.Parse checks the rest of the syntax afterwards.
func findConfigFlag(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			return ""
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "config" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// loadConfig sets the flags of fs from the TOML file at path, whose keys
// are flag names (a list sets a repeatable flag once per element), and
// returns its seed URLs (key "urls"). An unknown key is an error: a typo
// must not silently leave a default in force.
func loadConfig(fs *flag.FlagSet, path string) ([]string, error) {
	var m map[string]any
	md, err := toml.DecodeFile(path, &m)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	var urls []string
	for _, key := range md.Keys() {
		if len(key) != 1 {
			continue // inside a table: reported with the table below
		}
		name := key[0]
		v := m[name]
		if name == configURLs {
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("config %s: %s must be a list of URLs", path, name)
			}
			for _, u := range list {
				s, ok := u.(string)
				if !ok {
					return nil, fmt.Errorf("config %s: %s must be a list of strings, not %v", path, name, u)
				}
				urls = append(urls, s)
			}
			continue
		}
		f := fs.Lookup(name)
		if f == nil || name == "config" {
			return nil, fmt.Errorf("config %s: unknown key %q%s", path, name, suggest(fs, name))
		}
		values, err := configValues(v)
		if err != nil {
			return nil, fmt.Errorf("config %s: %s: %w", path, name, err)
		}
		_, repeatable := f.Value.(*regexpList)
		if _, ok := f.Value.(*stringList); ok {
			repeatable = true
		}
		if len(values) != 1 && !repeatable {
			return nil, fmt.Errorf("config %s: %s takes one value, not a list", path, name)
		}
		for _, s := range values {
			if err := fs.Set(name, s); err != nil {
				return nil, fmt.Errorf("config %s: %s = %q: %w", path, name, s, err)
			}
		}
	}
	return urls, nil
}

// configValues turns a TOML value into flag values.
func configValues(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case bool:
		return []string{strconv.FormatBool(v)}, nil
	case int64:
		return []string{strconv.FormatInt(v, 10)}, nil
	case float64:
		return []string{strconv.FormatFloat(v, 'g', -1, 64)}, nil
	case []any:
		var out []string
		for _, e := range v {
			s, err := configValues(e)
			if err != nil || len(s) != 1 {
				return nil, fmt.Errorf("a list may only hold strings, numbers and booleans")
			}
			out = append(out, s...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T values are not used: keys are flag names, without tables", v)
}

// suggest returns ` (did you mean "X"?)` for the flag name closest to name,
// or "".
func suggest(fs *flag.FlagSet, name string) string {
	best, dist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < dist {
			best, dist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// regexpList is a repeatable flag of regular expressions. Values set from
// a config file are replaced, not extended, by those on the command line.
type regexpList struct {
	dst        *[]*regexp.Regexp
	fromConfig bool // the values came from the config file
}

func (l *regexpList) String() string {
	if l == nil || l.dst == nil {
		return ""
	}
	s := make([]string, len(*l.dst))
	for i, re := range *l.dst {
		s[i] = re.String()
	}
	return strings.Join(s, " ")
}

func (l *regexpList) Set(s string) error {
	re, err := regexp.Compile(s)
	if err != nil {
		return err
	}
	if l.fromConfig {
		*l.dst, l.fromConfig = nil, false
	}
	*l.dst = append(*l.dst, re)
	return nil
}

// resetLists marks the repeatable flags' values as the config file's, so
// that the command line replaces them.
func resetLists(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if l, ok := f.Value.(*regexpList); ok && len(*l.dst) > 0 {
			l.fromConfig = true
		}
		if l, ok := f.Value.(*stringList); ok && len(*l.dst) > 0 {
			l.fromConfig = true
		}
	})
}

// newLogger returns the logger of the crawl's operational messages: text
// without timestamps (a terminal's reader has the time) or, for machines,
// JSON lines with them.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	case "text", "":
	default:
		return nil, fmt.Errorf("%w: --log-format %q: want text or json", errUsage, format)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && slices.Contains([]string{slog.TimeKey}, a.Key) {
				return slog.Attr{}
			}
			return a
		},
	})), nil
}

// durationFlag is a time.Duration flag that also takes a bare integer
// (-1 for off, as every limit), since "-1" is not a Go duration.
// durationFlag is a time.Duration flag that takes a bare 0 or negative
// integer; with zeroMeans set, an explicit zero is stored as zeroMeans
// (for an option whose zero value in the library is its default, where a
// user who writes 0 means none).
type durationFlag struct {
	p         *time.Duration
	zeroMeans time.Duration
}

func (d durationFlag) String() string {
	if d.p == nil {
		return "0s"
	}
	return d.p.String()
}

func (d durationFlag) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > 0 {
			return fmt.Errorf("a duration needs a unit: %ss?", s)
		}
		*d.p = time.Duration(n)
		if n == 0 && d.zeroMeans != 0 {
			*d.p = d.zeroMeans
		}
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	if v == 0 && d.zeroMeans != 0 {
		*d.p = d.zeroMeans
	}
	return nil
}

// durationVar defines a durationFlag with a default.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(durationFlag{p: p}, name, usage)
}

// negatedVar defines a boolean flag that sets *p to its negation, for an
// option whose zero value is the default on (--filter-growth sets
// crawl.Options.FixedFilter). Its default is true: *p starts false.
func negatedVar(fs *flag.FlagSet, p *bool, name, usage string) {
	*p = false
	fs.Var(negatedFlag{p}, name, usage)
}

type negatedFlag struct{ p *bool }

func (f negatedFlag) String() string {
	if f.p == nil {
		return "false" // flag's zero value, so that -help prints "(default true)"
	}
	return strconv.FormatBool(!*f.p)
}

func (f negatedFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*f.p = !v
	return nil
}

func (f negatedFlag) IsBoolFlag() bool { return true }
