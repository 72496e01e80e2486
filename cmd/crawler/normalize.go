package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/layercrawl/layercrawl/urlnorm"
)

// defaultMaxLine bounds one input line; longer lines give one ERROR line
// each, so memory stays constant whatever the input.
const defaultMaxLine = 1 << 20

// trailingSlashFlag parses --trailing-slash.
type trailingSlashFlag struct{ v *urlnorm.TrailingSlash }

func (f trailingSlashFlag) String() string {
	if f.v == nil {
		return urlnorm.KeepTrailingSlash.String()
	}
	return f.v.String()
}

func (f trailingSlashFlag) Set(s string) error {
	for _, t := range []urlnorm.TrailingSlash{urlnorm.KeepTrailingSlash, urlnorm.AddTrailingSlash, urlnorm.RemoveTrailingSlash} {
		if s == t.String() {
			*f.v = t
			return nil
		}
	}
	return fmt.Errorf("want keep, add or remove, not %q", s)
}

// normalizeFlags defines on fs a flag for each optional normalization of
// urlnorm.Options, all off by default, writing into o. The crawl and the
// normalize command share them, so that "crawler normalize" with the same
// flags shows what a crawl will make of its URLs. note is appended to each
// flag's help.
func normalizeFlags(fs *flag.FlagSet, o *urlnorm.Options, note string) {
	fs.BoolVar(&o.SortQuery, "sort-query", false, "sort query pairs by key (stable; keeps ';', a vs a=, and repeated keys' order)"+note)
	fs.BoolVar(&o.RemoveSessionParams, "remove-session-params", false, "drop session and tracking parameters (see --session-params)"+note)
	fs.Func("session-params", "comma-separated names for --remove-session-params, a trailing * matching any suffix (default: "+strings.Join(urlnorm.DefaultSessionParams(), ",")+")", func(s string) error {
		o.SessionParams = nil
		if s != "" {
			o.SessionParams = strings.Split(s, ",")
		}
		return nil
	})
	fs.BoolVar(&o.CollapseSlashes, "collapse-slashes", false, "replace runs of '/' in the path with one"+note)
	fs.Var(trailingSlashFlag{&o.TrailingSlash}, "trailing-slash", "keep, add or remove a trailing slash of non-root paths"+note)
	fs.BoolVar(&o.RemoveDefaultPages, "remove-default-pages", false, "remove a last segment such as index.html or default.aspx"+note)
	fs.BoolVar(&o.FoldWWW, "fold-www", false, "remove a leading www. when the registrable domain stays the same"+note)
	fs.BoolVar(&o.IgnoreScheme, "ignore-scheme", false, "leave the scheme out of the segments, so http and https share a key"+note)
	fs.BoolVar(&o.DecodeNumericHosts, "decode-numeric-hosts", false, "write IPv4-mapped IPv6 hosts as IPv4 (other numeric IPv4 forms are always decoded)"+note)
}

// runNormalize reads URLs from stdin, one per line, and writes exactly one
// line per input line: the canonical URL (or, with --segments, its filter
// segments separated by tabs), or "ERROR<TAB>reason". It streams: memory
// does not grow with the input.
func runNormalize(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "normalize", "[flags] < urls.txt")
	var (
		opts     urlnorm.Options
		segments bool
		base     string
		maxLine  int
	)
	fs.BoolVar(&segments, "segments", false, "print the filter segments (layer 1 = scheme://host[:port], then path segments), tab-separated, instead of the URL")
	fs.StringVar(&base, "base", "", "resolve each line against this absolute http(s) URL, as a browser resolves a link (default: each line must be absolute)")
	normalizeFlags(fs, &opts, "")
	fs.IntVar(&maxLine, "max-line", defaultMaxLine, "longest input line in bytes; a longer one gives one ERROR line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if maxLine < 1 {
		return fmt.Errorf("%w: --max-line must be positive", errUsage)
	}
	n, err := urlnorm.New(opts)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var b *urlnorm.Base
	if base != "" {
		if b, err = n.ParseBase(base); err != nil {
			return fmt.Errorf("%w: --base: %v", errUsage, err)
		}
	}
	return normalizeStream(ctx, e.stdin, e.stdout, n, b, segments, maxLine)
}

func normalizeStream(ctx context.Context, in io.Reader, out io.Writer, n *urlnorm.Normalizer, base *urlnorm.Base, segments bool, maxLine int) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	var line []byte
	var segs []string
	for count := 0; ; count++ {
		if count%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return errors.Join(err, w.Flush())
			}
		}
		var tooLong bool
		var rerr error
		line, tooLong, rerr = readLine(r, line[:0], maxLine)
		if rerr != nil && rerr != io.EOF {
			return errors.Join(fmt.Errorf("read stdin: %w", rerr), w.Flush())
		}
		if rerr == io.EOF && len(line) == 0 && !tooLong {
			break
		}
		switch {
		case tooLong:
			fmt.Fprintf(w, "ERROR\tline longer than %d bytes (raise --max-line to accept it)\n", maxLine)
		default:
			var canon string
			var err error
			if base != nil {
				canon, err = base.Resolve(string(line))
			} else {
				canon, err = n.Normalize(string(line))
			}
			switch {
			case err != nil:
				w.WriteString("ERROR\t")
				w.WriteString(err.Error())
			case segments:
				segs = n.AppendSegments(segs[:0], canon)
				for i, s := range segs {
					if i > 0 {
						w.WriteByte('\t')
					}
					w.WriteString(s)
				}
			default:
				w.WriteString(canon)
			}
			w.WriteByte('\n')
		}
		if rerr == io.EOF {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

// readLine reads one line into buf (without "\n" or "\r\n"). A line longer
// than max is consumed to its end but not kept: tooLong reports it. err is
// io.EOF when the input ended (line may then hold a last unterminated line).
func readLine(r *bufio.Reader, buf []byte, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+2 { // room for "\r\n"
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		buf = trimEOL(buf)
		if !tooLong && len(buf) > max {
			tooLong, buf = true, buf[:0]
		}
		return buf, tooLong, err
	}
}

func trimEOL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
		if len(b) > 0 && b[len(b)-1] == '\r' {
			b = b[:len(b)-1]
		}
	}
	return b
}

// Compile-time check that trailingSlashFlag is a flag.Value.
var _ flag.Value = trailingSlashFlag{}
