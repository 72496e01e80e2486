package frontier

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// memStore is an in-memory Store with atomic batches and an optional
// injected write failure.
type memStore struct {
	mu      sync.Mutex
	m       map[string][]byte
	writes  int
	failAt  int // fail the failAt-th write (1-based); 0 never
	failErr error
	noRange bool // its Writer has no DeleteRange: the journal is trimmed key by key
}

func newMemStore() *memStore { return &memStore{m: map[string][]byte{}} }

func (s *memStore) Get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[string(key)]
	if !ok {
		return nil, ErrNotFound
	}
	return slices.Clone(v), nil
}

type memBatch struct {
	set    map[string][]byte
	del    map[string]bool
	ranges [][2]string // DeleteRange's, applied before del and set
	ops    []string
}

func (b *memBatch) DeleteRange(start, end []byte) error {
	b.ops = append(b.ops, "range:"+string(start))
	b.ranges = append(b.ranges, [2]string{string(start), string(end)})
	return nil
}

// plainBatch hides memBatch's DeleteRange (memStore.noRange).
type plainBatch struct{ b *memBatch }

func (p plainBatch) Set(k, v []byte) error { return p.b.Set(k, v) }
func (p plainBatch) Delete(k []byte) error { return p.b.Delete(k) }

func (b *memBatch) Set(k, v []byte) error {
	b.ops = append(b.ops, string(k))
	b.set[string(k)] = slices.Clone(v)
	delete(b.del, string(k))
	return nil
}

func (b *memBatch) Delete(k []byte) error {
	b.ops = append(b.ops, string(k))
	b.del[string(k)] = true
	delete(b.set, string(k))
	return nil
}

func (s *memStore) Write(fn func(Writer) error) error {
	b := &memBatch{set: map[string][]byte{}, del: map[string]bool{}}
	var w Writer = b
	if s.noRange {
		w = plainBatch{b}
	}
	if err := fn(w); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.failAt > 0 && s.writes == s.failAt {
		return s.failErr
	}
	for _, r := range b.ranges {
		for k := range s.m {
			if k >= r[0] && k < r[1] {
				delete(s.m, k)
			}
		}
	}
	for k := range b.del {
		delete(s.m, k)
	}
	for k, v := range b.set {
		s.m[k] = v
	}
	return nil
}

func (s *memStore) Ascend(start, end []byte, fn func(k, v []byte) bool) error {
	s.mu.Lock()
	var keys []string
	for k := range s.m {
		if k >= string(start) && (end == nil || k < string(end)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = s.m[k]
	}
	s.mu.Unlock()
	for i, k := range keys {
		if !fn([]byte(k), vals[i]) {
			break
		}
	}
	return nil
}

// clone copies the store, as a crash would leave it.
func (s *memStore) clone() *memStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := newMemStore()
	for k, v := range s.m {
		c.m[k] = slices.Clone(v)
	}
	return c
}

func (s *memStore) countPrefix(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.m {
		if strings.HasPrefix(k, p) {
			n++
		}
	}
	return n
}

// exactSeen is an exact seen-set (no false positives).
type exactSeen struct {
	mu  sync.Mutex
	m   map[string]bool
	err error
}

func newExactSeen() *exactSeen { return &exactSeen{m: map[string]bool{}} }

func (s *exactSeen) TestAndAdd(_ context.Context, seg []string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	k := strings.Join(seg, "\x00")
	was := s.m[k]
	s.m[k] = true
	return was, nil
}

func (s *exactSeen) clone() *exactSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := newExactSeen()
	for k := range s.m {
		c.m[k] = true
	}
	return c
}

func (s *exactSeen) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// simpleNorm resolves with net/url and lowercases the host and drops the
// fragment: enough normalization for the frontier's tests.
type simpleNorm struct{}

var errNoScheme = errors.New("fake: unsupported scheme")

func (simpleNorm) Normalize(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errNoScheme
	}
	u.Host = strings.ToLower(u.Host)
	u.Fragment = ""
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}

func (n simpleNorm) Resolve(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return n.Normalize(b.ResolveReference(r).String())
}

func (simpleNorm) Segments(canonical string) []string {
	u, err := url.Parse(canonical)
	if err != nil {
		return []string{canonical}
	}
	segs := []string{u.Scheme + "://" + u.Host}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return append(segs, strings.Split(strings.TrimPrefix(p, "/"), "/")...)
}
