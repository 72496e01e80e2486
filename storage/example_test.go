package storage_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/layercrawl/layercrawl/storage"
)

// A per-host FIFO queue in the store: append in one durable batch, read the
// head with Ascend, delete what was taken.
func ExampleStore() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := storage.Open(filepath.Join(dir, "state"), storage.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	key := func(host string, seq byte) []byte { return append([]byte("q/"+host+"\x00"), seq) }
	err = s.Write(func(w storage.Writer) error {
		for i, u := range []string{"http://a.example/", "http://a.example/x", "http://a.example/y"} {
			if err := w.Set(key("a.example", byte(i)), []byte(u)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	var taken [][]byte
	err = s.Ascend([]byte("q/a.example\x00"), []byte("q/a.example\x01"), func(k, v []byte) bool {
		fmt.Println("pop", string(v))
		taken = append(taken, append([]byte(nil), k...)) // k is only valid during the call
		return len(taken) < 2
	})
	if err != nil {
		log.Fatal(err)
	}
	err = s.Write(func(w storage.Writer) error {
		for _, k := range taken {
			if err := w.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.Get(key("a.example", 0))
	fmt.Println(errors.Is(err, storage.ErrNotFound))
	// Output:
	// pop http://a.example/
	// pop http://a.example/x
	// true
}

// Mapping one fetch onto a WARC request/response pair and a crawl-log line
// that points at the response record.
func ExampleWARCWriter() {
	out, err := os.MkdirTemp("", "warc-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(out)
	w, err := storage.NewWARCWriter(filepath.Join(out, "warc"), storage.WARCOptions{})
	if err != nil {
		log.Fatal(err)
	}
	clog, err := storage.OpenCrawlLog(filepath.Join(out, "crawl.log.jsonl"))
	if err != nil {
		log.Fatal(err)
	}

	u, err := url.Parse("http://a.example/page")
	if err != nil {
		log.Fatal(err)
	}
	body := []byte("<html>hello</html>") // as fetched, after decompression
	start := time.Now()
	ref, err := w.Write(&storage.Exchange{
		TargetURI:    u.String(),
		IP:           "192.0.2.1",
		Date:         start,
		RequestHead:  storage.RequestHead("GET", u, "", http.Header{"User-Agent": {"layercrawl"}}),
		ResponseHead: storage.ResponseHead("", 200, http.Header{"Content-Type": {"text/html"}, "Content-Encoding": {"gzip"}}, len(body)),
		Body:         body,
	})
	if err != nil {
		log.Fatal(err)
	}
	err = clog.Write(storage.Entry{URL: u.String(), Status: 200, ContentType: "text/html", Bytes: int64(len(body)),
		FetchedAt: start, DurationMS: 1.5, IP: "192.0.2.1", WARCFile: ref.File, WARCRecordID: ref.ResponseID})
	if err != nil {
		log.Fatal(err)
	}
	if err := clog.Close(); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	f, err := os.Open(filepath.Join(out, "warc", ref.File))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	r := storage.NewWARCReader(f)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(rec.Header.Get("WARC-Type"), rec.Header.Get("WARC-Target-URI"),
			rec.Header.Get("WARC-Record-ID") == ref.ResponseID)
	}
	// Output:
	// warcinfo  false
	// request http://a.example/page false
	// response http://a.example/page true
}

// Telling a first run (no snapshot yet) from a damaged snapshot.
func ExampleReadFileAtomic() {
	dir, err := os.MkdirTemp("", "snapshot-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "seen.snapshot")
	decode := func(r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if string(b) != "snapshot v1" {
			return errors.New("bad magic")
		}
		return nil
	}

	err = storage.ReadFileAtomic(path, decode)
	fmt.Println("missing:", errors.Is(err, fs.ErrNotExist))

	if err := storage.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "snapshot v1")
		return err
	}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("read:", storage.ReadFileAtomic(path, decode))

	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		log.Fatal(err)
	}
	err = storage.ReadFileAtomic(path, decode)
	fmt.Println("corrupt:", errors.Is(err, storage.ErrCorrupt))
	// Output:
	// missing: true
	// read: <nil>
	// corrupt: true
}
