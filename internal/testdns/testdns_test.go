package testdns

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func TestResolver(t *testing.T) {
	var calls atomic.Int64
	r := New(func(host string) ([]netip.Addr, error) {
		calls.Add(1)
		switch host {
		case "a.web.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.7")}, nil
		case "dual.web.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.8"), netip.MustParseAddr("::1")}, nil
		case "down.web.test":
			return nil, ErrTemporary
		}
		return nil, ErrNotFound
	})
	ctx := context.Background()
	tests := []struct {
		host               string
		want               []string
		notFound, tempFail bool
	}{
		{"a.web.test", []string{"127.0.0.7"}, false, false},
		{"A.Web.Test", []string{"127.0.0.7"}, false, false}, // names are case-insensitive
		{"dual.web.test", []string{"127.0.0.8", "::1"}, false, false},
		{"nowhere.web.test", nil, true, false},
		{"down.web.test", nil, false, true},
	}
	for _, tc := range tests {
		got, err := r.LookupHost(ctx, tc.host)
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", tc.host, got, want)
		}
		var dnsErr *net.DNSError
		if (err != nil) != (tc.notFound || tc.tempFail) {
			t.Errorf("%s: err %v", tc.host, err)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.As(err, &dnsErr) || dnsErr.IsNotFound != tc.notFound || dnsErr.IsTemporary != tc.tempFail {
			t.Errorf("%s: err %#v, want IsNotFound %v IsTemporary %v", tc.host, err, tc.notFound, tc.tempFail)
		}
	}
	if calls.Load() == 0 {
		t.Error("lookup function never called")
	}

	// A dialer using the resolver connects to the answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	r2 := New(func(string) ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil })
	c, err := (&net.Dialer{Resolver: r2}).DialContext(ctx, "tcp", "some.name.test:"+port)
	if err != nil {
		t.Fatalf("dial through the resolver: %v", err)
	}
	c.Close()
}

func query(t testing.TB, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 42, RecursionDesired: true})
	b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func TestAnswer(t *testing.T) {
	lookup := func(string) ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil }
	var p dnsmessage.Parser
	h, err := p.Start(Answer(query(t, "x.test.", dnsmessage.TypeA), lookup))
	if err != nil || h.ID != 42 || !h.Response || h.RCode != dnsmessage.RCodeSuccess {
		t.Fatalf("header %+v, %v", h, err)
	}
	p.SkipAllQuestions()
	a, err := p.AllAnswers()
	if err != nil || len(a) != 1 || a[0].Body.(*dnsmessage.AResource).A != [4]byte{10, 1, 2, 3} {
		t.Fatalf("answers %v, %v", a, err)
	}
	// An IPv4 address is no AAAA answer.
	h, _ = p.Start(Answer(query(t, "x.test.", dnsmessage.TypeAAAA), lookup))
	p.SkipAllQuestions()
	if a, _ := p.AllAnswers(); len(a) != 0 || h.RCode != dnsmessage.RCodeSuccess {
		t.Errorf("AAAA query: %v, rcode %v", a, h.RCode)
	}
	// No readable header: no answer; no question: FORMERR.
	if got := Answer([]byte{1, 2, 3}, lookup); got != nil {
		t.Errorf("garbage answered %x", got)
	}
	bare := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7})
	msg, _ := bare.Finish()
	if h, err := p.Start(Answer(msg, lookup)); err != nil || h.RCode != dnsmessage.RCodeFormatError {
		t.Errorf("no question: %+v, %v", h, err)
	}
}

// FuzzAnswer feeds arbitrary queries to the server: it must not panic, and
// whatever it answers must parse as a response with the query's ID.
func FuzzAnswer(f *testing.F) {
	f.Add(query(f, "a.web.test.", dnsmessage.TypeA))
	f.Add(query(f, "b.test.", dnsmessage.TypeAAAA))
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	lookup := func(host string) ([]netip.Addr, error) {
		switch len(host) % 3 {
		case 0:
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
		case 1:
			return nil, ErrNotFound
		}
		return nil, ErrTemporary
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c := &conn{lookup: lookup}
		framed := append([]byte{byte(len(msg) >> 8), byte(len(msg))}, msg...)
		if len(msg) > 0xffff {
			return
		}
		if _, err := c.Write(framed); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		buf := make([]byte, 100)
		for {
			n, err := c.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if out.Len() == 0 {
			return
		}
		resp := out.Bytes()
		if n := int(resp[0])<<8 | int(resp[1]); n != len(resp)-2 {
			t.Fatalf("frame length %d, %d bytes follow", n, len(resp)-2)
		}
		var p dnsmessage.Parser
		h, err := p.Start(resp[2:])
		if err != nil || !h.Response || h.ID != uint16(msg[0])<<8|uint16(msg[1]) {
			t.Fatalf("answer %+v, %v", h, err)
		}
	})
}
