package experiments

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readAll runs ReadURLs over s and returns the URLs it accepted.
func readAll(t *testing.T, s string, opts ReadOptions) ([]string, ReadStats, error) {
	t.Helper()
	var got []string
	st, err := ReadURLs(context.Background(), strings.NewReader(s), "test", opts, func(u []byte) error {
		got = append(got, string(u))
		return nil
	})
	return got, st, err
}

func TestReadURLs(t *testing.T) {
	long := "http://a.example/" + strings.Repeat("x", 200_000)
	tests := []struct {
		name      string
		in        string
		opts      ReadOptions
		want      []string
		wantBad   map[BadReason]int64
		wantBlank int64
	}{
		{
			name: "plain lines, CRLF, blank, no final newline",
			in:   "http://a.example/\r\n\n   \nhttps://b.example/x y\nHTTP://C.example",
			want: []string{"http://a.example/", "https://b.example/x y", "HTTP://C.example"},
			// "   " is blank too.
			wantBlank: 2,
		},
		{
			name:    "bad lines counted by reason",
			in:      "no scheme here\nftp://a.example/\nhttps://\nhttp://ok.example/\nmailto:x@y\n\x00http://nul.example/\n",
			want:    []string{"http://ok.example/"},
			wantBad: map[BadReason]int64{BadNoURL: 3, BadScheme: 1, BadNUL: 1},
		},
		{
			name: "auto takes the last tab field (id<TAB>url and query log)",
			in:   "17\thttp://a.example/1\n00:00:01\t123\t[q]\t1 2\twww.b.example/2\n",
			// The second has no scheme and auto adds none.
			want:    []string{"http://a.example/1"},
			wantBad: map[BadReason]int64{BadNoURL: 1},
		},
		{
			name: "sogouq: last column, http assumed",
			in:   "00:00:01\t123\t[q]\t1 2\twww.b.example/2\n00:00:02\t123\t[q]\t1\t2\thttps://c.example/\nonlyonecolumn\n",
			opts: ReadOptions{Format: FormatSogouQ},
			want: []string{"http://www.b.example/2", "https://c.example/"},
			// A line with no tab has no columns.
			wantBad: map[BadReason]int64{BadColumns: 1},
		},
		{
			name:    "sogouq: explicit column",
			in:      "a\twww.x.example/\tc\nshort\n",
			opts:    ReadOptions{Format: FormatSogouQ, Column: 2},
			want:    []string{"http://www.x.example/"},
			wantBad: map[BadReason]int64{BadColumns: 1},
		},
		{
			name:    "idurl needs a tab",
			in:      "1\thttp://a.example/\nhttp://b.example/\n",
			opts:    ReadOptions{Format: FormatIDURL},
			want:    []string{"http://a.example/"},
			wantBad: map[BadReason]int64{BadColumns: 1},
		},
		{
			name: "plain keeps tabs inside the line",
			in:   "http://a.example/\tx\n",
			opts: ReadOptions{Format: FormatPlain},
			want: []string{"http://a.example/\tx"},
		},
		{
			name: "default scheme",
			in:   "a.example/x\n",
			opts: ReadOptions{DefaultScheme: "https"},
			want: []string{"https://a.example/x"},
		},
		{
			name: "invalid UTF-8 and control bytes are kept",
			in:   "http://a.example/\xff\xfe\nhttp://b.example/it\x19s\n",
			want: []string{"http://a.example/\xff\xfe", "http://b.example/it\x19s"},
		},
		{
			name:    "a line longer than the limit is skipped whole",
			in:      long + "\nhttp://after.example/\n",
			opts:    ReadOptions{MaxLineBytes: 100_000},
			want:    []string{"http://after.example/"},
			wantBad: map[BadReason]int64{BadTooLong: 1},
		},
		{
			name: "a long line within the limit is kept",
			in:   long + "\nhttp://after.example/\n",
			want: []string{long, "http://after.example/"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st, err := readAll(t, tc.in, tc.opts)
			if err != nil {
				t.Fatalf("ReadURLs: %v", err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got URLs %q, want %q", got, tc.want)
			}
			var wantBad int64
			for r, c := range tc.wantBad {
				wantBad += c
				if st.BadBy[r] != c {
					t.Errorf("got %d lines bad for %v, want %d", st.BadBy[r], r, c)
				}
			}
			if st.Bad != wantBad {
				t.Errorf("got %d bad lines, want %d (%+v)", st.Bad, wantBad, st.Examples)
			}
			if st.Blank != tc.wantBlank {
				t.Errorf("got %d blank lines, want %d", st.Blank, tc.wantBlank)
			}
			if st.Lines != st.Blank+st.Bad+st.URLs {
				t.Errorf("lines %d != blank %d + bad %d + urls %d", st.Lines, st.Blank, st.Bad, st.URLs)
			}
		})
	}
}

func TestReadURLsGzipAndErrors(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("http://a.example/\nbad\nhttp://b.example/\n"))
	zw.Close()
	got, st, err := readAll(t, buf.String(), ReadOptions{})
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	if want := []string{"http://a.example/", "http://b.example/"}; !slices.Equal(got, want) || st.Bad != 1 {
		t.Errorf("gzip: got %q (bad %d), want %q (bad 1)", got, st.Bad, want)
	}
	if len(st.Examples) != 1 || st.Examples[0].Line != 2 || st.Examples[0].Reason != BadNoURL {
		t.Errorf("got examples %+v, want line 2 %v", st.Examples, BadNoURL)
	}

	// A truncated gzip stream is a read error, not a bad line.
	trunc := buf.Bytes()[:buf.Len()-6]
	if _, _, err := readAll(t, string(trunc), ReadOptions{}); err == nil {
		t.Error("truncated gzip: got no error")
	}

	// fn's error stops the read and comes back as is.
	stop := errors.New("stop")
	_, err = ReadURLs(context.Background(), strings.NewReader("http://a.example/\n"), "x", ReadOptions{}, func([]byte) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("got %v, want the callback's error", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadURLs(ctx, strings.NewReader("http://a.example/\n"), "x", ReadOptions{}, func([]byte) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}

	for _, o := range []ReadOptions{{Format: 99}, {Column: -1}, {MaxLineBytes: -1}, {DefaultScheme: "ht tp"}} {
		if _, _, err := readAll(t, "", o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("options %+v: got %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []Format{FormatAuto, FormatPlain, FormatSogouQ, FormatIDURL} {
		got, err := ParseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	if _, err := ParseFormat("csv"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseFormat(csv): got %v, want ErrInvalidOptions", err)
	}
}

func TestLoadDataset(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	b := filepath.Join(dir, "b.txt.gz")
	if err := os.WriteFile(a, []byte("http://x.example/1\nhttp://x.example/2\nbad line\nhttp://x.example/1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("http://x.example/2\nhttp://x.example/3\n"))
	zw.Close()
	if err := os.WriteFile(b, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin := strings.NewReader("5\thttp://x.example/4\n")
	d, err := LoadDataset(context.Background(), []Source{{Path: a}, {Path: b}, {Path: "-", Stdin: stdin}}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://x.example/1", "http://x.example/2", "http://x.example/3", "http://x.example/4"}
	if !slices.Equal(d.URLs, want) {
		t.Errorf("got %q, want %q", d.URLs, want)
	}
	if got := []int64{d.Sources[0].Distinct, d.Sources[1].Distinct, d.Sources[2].Distinct}; !slices.Equal(got, []int64{2, 1, 1}) {
		t.Errorf("got new distinct per source %v, want [2 1 1]", got)
	}
	if d.Total.Bad != 1 || d.Duplicates() != 2 || d.Total.Lines != 7 {
		t.Errorf("got bad %d, duplicates %d, lines %d; want 1, 2, 7", d.Total.Bad, d.Duplicates(), d.Total.Lines)
	}

	if _, err := LoadDataset(context.Background(), []Source{{Path: filepath.Join(dir, "missing")}}, ReadOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
	if _, err := LoadDataset(context.Background(), nil, ReadOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no sources: got %v, want ErrInvalidOptions", err)
	}
	if _, err := LoadDataset(context.Background(), []Source{{Path: "-"}}, ReadOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("stdin without reader: got %v, want ErrInvalidOptions", err)
	}
}

// sharedDatasets returns the shared datasets directory, skipping (or
// failing under CI=true) when it is absent.
func sharedDatasets(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "datasets")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared datasets not found at %s: %v", dir, err)
		}
		t.Skipf("shared datasets not found at %s (clone beside ../shared to run this test)", dir)
	}
	return dir
}

// TestSharedDatasets reads the two smaller shared files and checks them
// against the counts of the datasets' README.
func TestSharedDatasets(t *testing.T) {
	dir := sharedDatasets(t)
	tests := []struct {
		file       string
		wantLines  int64
		wantBad    int64 // ada_kasztp holds one bare "https://"
		wantUnique int
	}{
		{"sogouq_sample_clicks.txt.gz", 7691, 0, 7691},
		{"ada_kasztp.txt.gz", 47940, 1, 47939},
	}
	for _, tc := range tests {
		d, err := LoadDataset(context.Background(), []Source{{Path: filepath.Join(dir, tc.file)}}, ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if d.Total.Lines != tc.wantLines || d.Total.Bad != tc.wantBad || len(d.URLs) != tc.wantUnique {
			t.Errorf("%s: got lines %d, bad %d, distinct %d; want %d, %d, %d",
				tc.file, d.Total.Lines, d.Total.Bad, len(d.URLs), tc.wantLines, tc.wantBad, tc.wantUnique)
		}
	}
}

func FuzzReadURLs(f *testing.F) {
	for _, s := range []string{
		"http://a.example/\n", "1\thttps://b.example/x\n", "\n\r\n", "ftp://x\n", "https://\n",
		"a\tb\tc\twww.x/\n", "\xff\xfe\x00\n", "http://a.example/" + strings.Repeat("y", 300) + "\nx",
	} {
		f.Add(s, uint8(0), 0)
		f.Add(s, uint8(2), 2)
	}
	f.Fuzz(func(t *testing.T, in string, format uint8, column int) {
		opts := ReadOptions{Format: Format(format % 4), Column: column % 8, MaxLineBytes: 64}
		if opts.Column < 0 {
			opts.Column = -opts.Column
		}
		var n int64
		st, err := ReadURLs(context.Background(), strings.NewReader(in), "fuzz", opts, func(u []byte) error {
			n++
			if len(u) > 64+len("http://") {
				t.Errorf("accepted %d bytes, over the limit", len(u))
			}
			if i := bytes.Index(u, []byte("://")); i < 0 || !isHTTPScheme(u[:i]) || len(u) == i+3 {
				t.Errorf("accepted %q, not an absolute http(s) URL", u)
			}
			return nil
		})
		if err != nil {
			if strings.HasPrefix(in, "\x1f\x8b") {
				return // a broken gzip stream is an error, as it should be
			}
			t.Fatalf("ReadURLs on plain text: %v", err)
		}
		if st.URLs != n || st.Lines != st.Blank+st.Bad+st.URLs {
			t.Errorf("inconsistent stats %+v for %d URLs", st, n)
		}
	})
}
