package confirm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMemoryNonceStoreOutOfOrderNow: Consume evicts with the caller's
// now. Concurrent requests read their clock before they reach the store's
// mutex, so the store sees now values out of order (and a wall clock may
// step back). A call whose now is at a nonce's expiry evicts it; a replay
// whose now was read a millisecond earlier then finds the nonce unused, and
// its expiry still in the future, and is accepted a second time.
func TestMemoryNonceStoreOutOfOrderNow(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryNonceStore()
	exp := t0.Add(DefaultTTL)
	if first, err := m.Consume(ctx, "a", t0, exp); err != nil || !first {
		t.Fatalf("first Consume(a) = %v, %v; want true, nil", first, err)
	}
	// Another request, whose clock read is at a's expiry, reaches the
	// store first and evicts a.
	if first, err := m.Consume(ctx, "b", exp, exp.Add(DefaultTTL)); err != nil || !first {
		t.Fatalf("Consume(b) = %v, %v; want true, nil", first, err)
	}
	// The replay of a, whose clock was read 1ms before its expiry.
	first, err := m.Consume(ctx, "a", exp.Add(-time.Millisecond), exp)
	if err != nil {
		t.Fatal(err)
	}
	if first {
		t.Errorf("Consume(a) replayed with now 1ms before its expiry = true, want false: a used nonce was accepted twice")
	}
}

// TestVerifyReplayAfterEviction is the same at the Signer level, with
// the default store: one confirmation state verifies twice.
func TestVerifyReplayAfterEviction(t *testing.T) {
	ctx := context.Background()
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	st := issue(t, s, t0, alice)
	if err := s.Verify(ctx, t0.Add(time.Second), st, alice); err != nil {
		t.Fatalf("first Verify: %v", err)
	}
	exp := t0.Add(DefaultTTL)
	// Any other confirmation verified with a clock read at st's expiry.
	other := issue(t, s, exp, alice)
	if err := s.Verify(ctx, exp, other, alice); err != nil {
		t.Fatalf("Verify(other): %v", err)
	}
	// The replay, its clock read 1ms earlier (a concurrent request).
	err := s.Verify(ctx, exp.Add(-time.Millisecond), st, alice)
	if !errors.Is(err, ErrReplayed) {
		t.Errorf("replayed Verify = %v, want ErrReplayed: the state was accepted twice", err)
	}
}

// TestArgsSHA256RefusesWhatDecodingWouldChange: decoding turns invalid
// UTF-8 and lone surrogates into U+FFFD, so such arguments would share a
// hash (and a confirmation) with others; a downstream that keeps them
// would run what the human never saw. They are refused.
func TestArgsSHA256RefusesWhatDecodingWouldChange(t *testing.T) {
	for _, bad := range []string{`{"target":"\ud800"}`, `{"target":"\udfff"}`, `{"t":"\ud800\u0041"}`, "{\"t\":\"\xff\"}"} {
		if h, err := ArgsSHA256([]byte(bad)); err == nil {
			t.Errorf("ArgsSHA256(%q) = %s, want an error", bad, h)
		}
	}
	for _, good := range []string{`{"target":"\ufffd"}`, `{"t":"\ud83c\udf89"}`, `{"t":"\\ud800"}`} {
		if _, err := ArgsSHA256([]byte(good)); err != nil {
			t.Errorf("ArgsSHA256(%q): %v", good, err)
		}
	}
}

// TestDescribeAmbiguous: the prompt is the human's only view of what
// is approved, yet different arguments read identically: keys are printed
// bare (only values get the quote-unless-plain treatment), so a key can
// contain "=" and ", "; and characters that the tool receives but that are
// removed from the prompt (tab, newline, zero-width space: all accepted by
// strict validation) leave no trace in a bare value.
func TestDescribeAmbiguous(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"key_with_separators", `{"a":"b","c":"d"}`, `{"a=b, c":"d"}`},
		{"invisible_chars_in_value", `{"target":"db-1"}`, `{"target":"db-1\u200b\t"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			da, db := Describe("wipe", []byte(tc.a)), Describe("wipe", []byte(tc.b))
			if da == db {
				t.Errorf("Describe(%s) == Describe(%s) == %q: the human cannot tell which is approved", tc.a, tc.b, da)
			}
		})
	}
}
