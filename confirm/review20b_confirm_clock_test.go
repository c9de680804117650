package confirm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestZeroClockVerifiesNothing: a clock that reads the zero time (a Now
// func that was never set up, a mock returning time.Time{}) is before every
// expiry, so it made every state, however long expired, pass Check, Used
// and Consume. It must verify nothing, and Issue must refuse to sign a
// state that can never verify instead of returning one.
func TestZeroClockVerifiesNothing(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryNonceStore()
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, &Options{Nonces: store})
	st := issue(t, s, t0, alice) // expired since t0 plus two minutes
	var zero time.Time

	if _, err := s.Check(zero, st, alice); err == nil {
		t.Errorf("Check at the zero time of a state long expired = nil, want an error")
	}
	if err := s.Verify(ctx, zero, st, alice); err == nil {
		t.Errorf("Verify at the zero time of a state long expired = nil, want an error")
	}
	// A ticket checked at a sound time, consumed by a clock that reads zero.
	tk, err := s.Check(t0, issue(t, s, t0, alice), alice)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Used(ctx, zero); err == nil {
		t.Errorf("Ticket.Used at the zero time = nil, want an error")
	}
	if err := tk.Consume(ctx, zero); err == nil {
		t.Errorf("Ticket.Consume at the zero time = nil, want an error")
	}
	if n := store.Len(); n != 0 {
		t.Errorf("the store holds %d nonces after calls at the zero time, want 0", n)
	}
	// The state is still there for a sound clock.
	if err := tk.Consume(ctx, t0); err != nil {
		t.Errorf("Consume at t0 = %v, want nil", err)
	}

	// Issue: a state whose expiry cannot be written verifies at no time.
	for name, now := range map[string]time.Time{
		"zero":        zero,
		"before_1970": time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC),
		"year_9999x":  time.Unix(1<<62, 0),
	} {
		t.Run(name, func(t *testing.T) {
			st, err := s.Issue(now, alice)
			if err == nil {
				_, cerr := s.Check(now, st, alice)
				t.Errorf("Issue(%v) = a state (which Check at the same time answers %v), want an error", now, cerr)
			}
		})
	}
}

// TestCheckTruncatedAtEveryLength: every prefix and every suffix of a
// state is refused, as is the state with its signature or payload cut by
// any number of characters, and nothing is used up by those attempts.
func TestCheckTruncatedAtEveryLength(t *testing.T) {
	s := newSigner(t, []Key{{ID: "key-2026", Secret: secretA}, {ID: "k0", Secret: secretB}}, nil)
	st := issue(t, s, t0, alice)
	for i := range len(st) {
		for _, v := range []string{st[:i], st[i+1:], st[:i] + st[i+1:]} {
			if _, err := s.Check(t0, v, alice); err == nil {
				t.Fatalf("Check(%q), the state cut around byte %d, verifies", v, i)
			}
		}
	}
	if err := s.Verify(context.Background(), t0, st, alice); err != nil {
		t.Fatalf("Verify of the state as issued = %v", err)
	}
}

// TestExpiryEdgesAcrossRotation: a state is valid up to, not at, its expiry
// second, whichever listed key signed it, and a key removed from the list
// refuses its states before their expiry, with ErrUnknownKey, never with a
// text naming the key or the state.
func TestExpiryEdgesAcrossRotation(t *testing.T) {
	ctx := context.Background()
	old := newSigner(t, []Key{{ID: "old", Secret: secretA}}, &Options{TTL: time.Minute})
	st := issue(t, old, t0.Add(300*time.Millisecond), alice) // expires t0+60s
	store := NewMemoryNonceStore()
	rotated := newSigner(t, []Key{{ID: "new", Secret: secretB}, {ID: "old", Secret: secretA}}, &Options{Nonces: store})
	if _, err := rotated.Check(t0.Add(time.Minute), st, alice); !errors.Is(err, ErrExpired) {
		t.Errorf("at its expiry: %v, want ErrExpired", err)
	}
	if err := rotated.Verify(ctx, t0.Add(time.Minute-time.Nanosecond), st, alice); err != nil {
		t.Errorf("1 ns before its expiry, old key still listed: %v, want nil", err)
	}
	retired := newSigner(t, []Key{{ID: "new", Secret: secretB}}, nil)
	st2 := issue(t, old, t0, alice)
	_, err := retired.Check(t0, st2, alice)
	if !errors.Is(err, ErrUnknownKey) {
		t.Errorf("old key removed: %v, want ErrUnknownKey", err)
	}
	for _, leak := range []string{st2, "old", string(secretA), alice.Subject, alice.ArgsSHA256} {
		if err != nil && leak != "" && containsFold(err.Error(), leak) {
			t.Errorf("error %q holds %q", err, leak)
		}
	}
	// The new key signs: a state the rotated signer issues verifies
	// after the old key is gone.
	if err := retired.Verify(ctx, t0, issue(t, rotated, t0, alice), alice); err != nil {
		t.Errorf("state of the rotated signer on the retired list: %v", err)
	}
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
