package redisfrontier

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/layercrawl/layercrawl/frontier"
)

func TestDecodeNext(t *testing.T) {
	good := []struct {
		reply any
		want  nextReply
	}{
		{[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "", ""},
			nextReply{kind: "ok", host: "a.example", entry: `{"u":"http://a.example/"}`, scopeVer: "3"}},
		{[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "", "1700000000789"},
			nextReply{kind: "ok", host: "a.example", entry: `{"u":"http://a.example/"}`, scopeVer: "3", due: 1700000000789, hasDue: true}},
		{[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "500", ""},
			nextReply{kind: "ok", host: "a.example", entry: `{"u":"http://a.example/"}`, scopeVer: "3", throttle: 500 * time.Millisecond}},
		{[]any{"stage", "a.example", `{"b":"x"}`, ""},
			nextReply{kind: "stage", host: "a.example", stage: `{"b":"x"}`}},
		{[]any{"limit", int64(2)}, nextReply{kind: "limit", leased: 2}},
		{[]any{"wait", "", "", int64(0), int64(0), ""}, nextReply{kind: "wait"}},
		{[]any{"wait", "1700000000123", "1700000000456", int64(4), int64(1), "1700000000789"},
			nextReply{kind: "wait", readyAt: 1700000000123, hasReady: true, expiry: 1700000000456, hasExp: true, ready: 4, leased: 1,
				due: 1700000000789, hasDue: true}},
	}
	for _, tt := range good {
		got, err := decodeNext(tt.reply)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("decodeNext(%v) = %+v, %v; want %+v", tt.reply, got, err, tt.want)
		}
	}
	// Each of these once read as a zero value somewhere: "wait" with
	// counts that are not integers read as 0 ready and 0 leased, which
	// is ErrExhausted, a clean end of the crawl.
	bad := []any{
		nil,
		"ok",
		int64(1),
		[]any{},
		[]any{int64(1)},
		[]any{"done"},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3"},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", ""},
		[]any{"ok", "a.example", int64(7), "3", "", ""},
		[]any{"ok", "", `{"u":"http://a.example/"}`, "3", "", ""},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "", "", "extra"},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "soon", ""},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "-5", ""},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", int64(5), ""},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "", "later"},
		[]any{"ok", "a.example", `{"u":"http://a.example/"}`, "3", "", int64(5)},
		[]any{"stage", "a.example"},
		[]any{"stage", nil, "{}", ""},
		[]any{"limit"},
		[]any{"limit", "2"},
		[]any{"limit", int64(-1)},
		[]any{"wait", "", "", "0", int64(0), ""},
		[]any{"wait", "", "", int64(0), nil, ""},
		[]any{"wait", "", "", int64(0), int64(0)},
		[]any{"wait", "soon", "", int64(1), int64(0), ""},
		[]any{"wait", "", int64(5), int64(1), int64(0), ""},
		[]any{"wait", "", "", int64(-3), int64(0), ""},
		[]any{"wait", "", "", int64(0), int64(0), "later"},
	}
	for _, v := range bad {
		got, err := decodeNext(v)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeNext(%#v) = %+v, %v; want an error wrapping ErrCorrupt", v, got, err)
		}
	}
}

func TestReplyFlag(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want bool
	}{{int64(1), true}, {int64(0), false}} {
		if got, err := replyFlag("done", tt.v); err != nil || got != tt.want {
			t.Errorf("replyFlag(%v) = %v, %v; want %v", tt.v, got, err, tt.want)
		}
	}
	for _, v := range []any{nil, int64(2), int64(-1), "1", []any{int64(1)}} {
		if _, err := replyFlag("done", v); !errors.Is(err, ErrCorrupt) {
			t.Errorf("replyFlag(%#v) error = %v, want ErrCorrupt", v, err)
		}
	}
}

func TestCheckAnswers(t *testing.T) {
	if got, err := checkAnswers("0110", 4, false); err != nil || got != "0110" {
		t.Errorf("checkAnswers(0110, 4) = %q, %v", got, err)
	}
	for _, tt := range []struct {
		v    any
		keys int
	}{
		{"011", 4},
		{"01100", 4},
		{"01x0", 4},
		{"", 1},
		{int64(1), 1},
		{nil, 1},
		{[]any{"1"}, 1},
	} {
		if _, err := checkAnswers(tt.v, tt.keys, false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("checkAnswers(%#v, %d) error = %v, want ErrCorrupt", tt.v, tt.keys, err)
		}
	}
}

// swapScript replaces a package script for the test (a fake that answers
// a crafted reply), restoring it at the end.
func swapScript(t *testing.T, s **redis.Script, src string) {
	old := *s
	*s = redis.NewScript(src)
	t.Cleanup(func() { *s = old })
}

// TestMalformedRepliesAreErrors runs the frontier and the seen-set against
// fake scripts on the real Redis: a malformed reply must come back as an
// error wrapping ErrCorrupt, at once (it is not transient), never as a
// clean end or an answer.
func TestMalformedRepliesAreErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testClient(t)
	s, err := OpenSeen(ctx, c, SeenOptions{Filter: smallFilter})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, c, Options{Seen: s, Normalizer: testNormalizer(t), Politeness: frontier.PolitenessOptions{Delay: -1}, Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("next, well-formed wait", func(t *testing.T) {
		swapScript(t, &nextScript, `return {'wait', '', '', 0, 0, ''}`)
		if _, err := f.Next(ctx); !errors.Is(err, frontier.ErrExhausted) {
			t.Fatalf("Next = %v, want ErrExhausted (the control case)", err)
		}
	})
	for name, src := range map[string]string{
		"next, counts as strings": `return {'wait', '', '', '0', '0', ''}`,
		"next, short wait":        `return {'wait', '', ''}`,
		"next, unknown kind":      `return {'done'}`,
		"next, not an array":      `return 'ok'`,
		"next, entry missing":     `return {'ok', 'a.example'}`,
	} {
		t.Run(name, func(t *testing.T) {
			swapScript(t, &nextScript, src)
			if e, err := f.Next(ctx); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Next = %+v, %v; want an error wrapping ErrCorrupt", e, err)
			}
		})
	}

	for name, src := range map[string]string{
		"seen, short answer":   `return '0'`,
		"seen, not 0 or 1":     `return '0x'`,
		"seen, integer answer": `return 1`,
	} {
		t.Run(name, func(t *testing.T) {
			swapScript(t, &seenScript, src)
			present := make([]bool, 2)
			err := s.TestAndAddBatch(ctx, [][]string{{"a.example", "1"}, {"a.example", "2"}}, present)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("TestAndAddBatch = %v, %v; want an error wrapping ErrCorrupt", present, err)
			}
		})
	}

	t.Run("stats, counter not a number", func(t *testing.T) {
		if err := c.rdb.HSet(ctx, f.key("stats"), "served", "many").Err(); err != nil {
			t.Fatal(err)
		}
		if st, err := f.Stats(ctx); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Stats = %+v, %v; want an error wrapping ErrCorrupt", st, err)
		}
	})
}

// FuzzDecodeNext: any reply, of any shape, decodes to one of the four
// kinds with consistent fields or to an error wrapping ErrCorrupt; it
// never panics.
func FuzzDecodeNext(f *testing.F) {
	f.Add("ok", "a.example", "{}", int64(0), int64(0), uint8(0))
	f.Add("wait", "", "", int64(1), int64(0), uint8(0b11000))
	f.Add("wait", "12", "x", int64(1), int64(0), uint8(0b11000))
	f.Add("limit", "", "", int64(3), int64(0), uint8(0b10))
	f.Add("stage", "h", "b", int64(0), int64(0), uint8(0x80))
	f.Fuzz(func(t *testing.T, kind, a, b string, n1, n2 int64, shape uint8) {
		// shape's low bits pick an integer instead of a string for
		// elements 1..4; its top bits the length (0 is 5).
		elems := []any{kind}
		str := []string{a, b, a, b}
		num := []int64{n1, n2, n1, n2}
		for i := 0; i < 4; i++ {
			if shape&(1<<(i+1)) != 0 {
				elems = append(elems, num[i])
			} else {
				elems = append(elems, str[i])
			}
		}
		if l := int(shape >> 5); l != 0 {
			elems = elems[:l]
		}
		nr, err := decodeNext(elems)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeNext(%#v) error %v does not wrap ErrCorrupt", elems, err)
			}
			return
		}
		switch nr.kind {
		case "ok", "stage":
			if nr.host == "" {
				t.Fatalf("decodeNext(%#v) = %+v: no host", elems, nr)
			}
		case "limit", "wait":
			if nr.ready < 0 || nr.leased < 0 {
				t.Fatalf("decodeNext(%#v) = %+v: negative count", elems, nr)
			}
		default:
			t.Fatalf("decodeNext(%#v) = %+v: unknown kind", elems, nr)
		}
	})
}

// FuzzCheckAnswers compares checkAnswers with the rule it implements: a
// string of exactly one '0' or '1' per key.
func FuzzCheckAnswers(f *testing.F) {
	f.Add("0110", 4)
	f.Add("01x0", 4)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, ans string, keys int) {
		want := len(ans) == keys
		for _, c := range ans {
			want = want && (c == '0' || c == '1')
		}
		got, err := checkAnswers(ans, keys, false)
		if want != (err == nil) || (err != nil && !errors.Is(err, ErrCorrupt)) || (err == nil && got != ans) {
			t.Fatalf("checkAnswers(%q, %d) = %q, %v; want valid=%v", ans, keys, got, err, want)
		}
	})
}
