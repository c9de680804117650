package confirm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNewSignerTTLBounds pins the TTL bounds NewSigner documents: zero
// (the default) and one second or more are accepted, anything negative or
// under one second, down to one nanosecond, is refused (states carry whole
// seconds, so a shorter TTL would issue states expiring as they are made).
func TestNewSignerTTLBounds(t *testing.T) {
	keys := []Key{{ID: "k1", Secret: secretA}}
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{
		{-time.Nanosecond, false},
		{time.Nanosecond, false},
		{time.Second - time.Nanosecond, false},
		{0, true},
		{time.Second, true},
		{time.Second + time.Nanosecond, true},
	} {
		s, err := NewSigner(keys, &Options{TTL: tc.ttl})
		if (err == nil) != tc.ok {
			t.Errorf("NewSigner(TTL %v) error = %v, want ok %v", tc.ttl, err, tc.ok)
		}
		if err == nil && tc.ttl != 0 && s.TTL() != tc.ttl {
			t.Errorf("NewSigner(TTL %v).TTL() = %v", tc.ttl, s.TTL())
		}
	}
}

// TestClockReadingEdgeAt1970 pins the edge of a clock reading: a time at
// the 1970 epoch (Unix 0) is not one, so Issue refuses to sign at it and
// Check, Ticket.Used and Ticket.Consume refuse a state at it with
// ErrExpired, even one whose expiry is still ahead; one second later is a
// clock reading, at which a state is issued and verifies.
func TestClockReadingEdgeAt1970(t *testing.T) {
	ctx := context.Background()
	epoch, first := time.Unix(0, 0), time.Unix(1, 0)
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)

	for _, now := range []time.Time{epoch, time.Unix(-1, 0), epoch.Add(-s.TTL() + time.Second)} {
		if st, err := s.Issue(now, alice); err == nil {
			t.Errorf("Issue(%v) = %q, want an error (not a clock reading)", now.UTC(), st)
		}
	}

	st := issue(t, s, first, alice) // expires at Unix 121
	if _, err := s.Check(epoch, st, alice); !errors.Is(err, ErrExpired) {
		t.Errorf("Check at Unix 0 = %v, want ErrExpired", err)
	}
	tk, err := s.Check(first, st, alice)
	if err != nil {
		t.Fatalf("Check at Unix 1 of a state issued then = %v, want nil", err)
	}
	if err := tk.Used(ctx, epoch); !errors.Is(err, ErrExpired) {
		t.Errorf("Ticket.Used at Unix 0 = %v, want ErrExpired", err)
	}
	if err := tk.Consume(ctx, epoch); !errors.Is(err, ErrExpired) {
		t.Errorf("Ticket.Consume at Unix 0 = %v, want ErrExpired", err)
	}
	if err := tk.Used(ctx, first); err != nil {
		t.Errorf("Ticket.Used at Unix 1 = %v, want nil", err)
	}
	if err := tk.Consume(ctx, first); err != nil {
		t.Errorf("Ticket.Consume at Unix 1 = %v, want nil", err)
	}
}

// TestIssueLatestExpiry pins the upper edge of Issue: a state whose expiry
// is the latest a state can carry (2^62 unix seconds) is issued and
// verifies; one second later Issue refuses, since no state could verify.
func TestIssueLatestExpiry(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	last := time.Unix(maxExpiry, 0).Add(-s.TTL())
	st, err := s.Issue(last, alice)
	if err != nil {
		t.Fatalf("Issue with the latest expiry = %v, want a state", err)
	}
	if _, err := s.Check(last, st, alice); err != nil {
		t.Errorf("Check of the state with the latest expiry = %v, want nil", err)
	}
	if st, err := s.Issue(last.Add(time.Second), alice); err == nil {
		t.Errorf("Issue with an expiry past the latest = %q, want an error", st)
	}
}

// TestIssueUpToMaxStateLen pins that Issue writes every state Check
// accepts by length: claims making a state of exactly maxStateLen
// characters are issued and verify, one byte more is refused by Issue.
func TestIssueUpToMaxStateLen(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	c := Claims{Subject: "s", Tool: "t"}
	longest := ""
	for n := 2900; n < 3100; n++ {
		c.ArgsSHA256 = strings.Repeat("a", n)
		st, err := s.Issue(t0, c)
		if err != nil {
			break
		}
		longest = st
	}
	if len(longest) != maxStateLen {
		t.Fatalf("the longest state Issue writes has %d characters, want %d", len(longest), maxStateLen)
	}
	c.ArgsSHA256 = strings.Repeat("a", len(c.ArgsSHA256)-1)
	if err := s.Verify(context.Background(), t0, longest, c); err != nil {
		t.Errorf("Verify of a state of maxStateLen characters = %v, want nil", err)
	}
}

// TestStateMACIsDomainSeparated pins the domain separation of the state
// MAC: it is HMAC-SHA256 over "mcpguard/confirm\x00" and the payload, so a
// plain HMAC-SHA256 of the payload under the same secret (what another use
// of a shared secret would compute) is refused with ErrBadSignature.
func TestStateMACIsDomainSeparated(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	st := issue(t, s, t0, alice)
	p64, m64, _ := strings.Cut(st, ".")
	raw, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil {
		t.Fatal(err)
	}
	want := hmac.New(sha256.New, secretA)
	want.Write([]byte("mcpguard/confirm\x00"))
	want.Write(raw)
	if got := base64.RawURLEncoding.EncodeToString(want.Sum(nil)); got != m64 {
		t.Errorf("state MAC = %s, want HMAC-SHA256 over the domain prefix and payload %s", m64, got)
	}
	plain := hmac.New(sha256.New, secretA)
	plain.Write(raw)
	forged := p64 + "." + base64.RawURLEncoding.EncodeToString(plain.Sum(nil))
	if _, err := s.Check(t0, forged, alice); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Check of the payload with a plain HMAC = %v, want ErrBadSignature", err)
	}
}

// checkerStore is a NonceChecker over a MemoryNonceStore whose Used fails
// with usedErr when it is set.
type checkerStore struct {
	*MemoryNonceStore
	usedErr error
}

func (c checkerStore) Used(ctx context.Context, nonce string, now, expires time.Time) (bool, error) {
	if c.usedErr != nil {
		return false, c.usedErr
	}
	return c.MemoryNonceStore.Used(ctx, nonce, now, expires)
}

// TestTicketUsedTellsReplayAndStoreFailure pins what Ticket.Used answers
// over a NonceChecker, so that a caller can refuse before it acts: nil for
// a fresh state (which stays usable), ErrReplayed once the state was
// consumed, and an error unwrapping to ErrStore and to the store's own
// error when the store cannot decide.
func TestTicketUsedTellsReplayAndStoreFailure(t *testing.T) {
	ctx := context.Background()
	for _, store := range []NonceChecker{NewMemoryNonceStore(), checkerStore{MemoryNonceStore: NewMemoryNonceStore()}} {
		s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, &Options{Nonces: store})
		tk, err := s.Check(t0, issue(t, s, t0, alice), alice)
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.Used(ctx, t0); err != nil {
			t.Errorf("%T: Used of a fresh state = %v, want nil", store, err)
		}
		if err := tk.Consume(ctx, t0); err != nil {
			t.Fatalf("%T: Consume after Used = %v, want nil", store, err)
		}
		if err := tk.Used(ctx, t0); !errors.Is(err, ErrReplayed) {
			t.Errorf("%T: Used of a consumed state = %v, want ErrReplayed", store, err)
		}
	}

	down := errors.New("store down")
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}},
		&Options{Nonces: checkerStore{MemoryNonceStore: NewMemoryNonceStore(), usedErr: down}})
	tk, err := s.Check(t0, issue(t, s, t0, alice), alice)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Used(ctx, t0); !errors.Is(err, ErrStore) || !errors.Is(err, down) {
		t.Errorf("Used with a failing store = %v, want ErrStore wrapping the store's error", err)
	}
}

// TestCheckSignatureOfWrongLengthIsMalformed pins that a state whose
// signature decodes but is not 32 bytes is malformed (ErrMalformed, the
// first check), not a bad signature nor an unknown key.
func TestCheckSignatureOfWrongLengthIsMalformed(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	other := newSigner(t, []Key{{ID: "k2", Secret: secretB}}, nil)
	enc := base64.RawURLEncoding
	for _, st := range []string{issue(t, s, t0, alice), issue(t, other, t0, alice)} {
		p64, m64, _ := strings.Cut(st, ".")
		sig, err := enc.DecodeString(m64)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range [][]byte{sig[:31], append(sig, 0), nil} {
			v := p64 + "." + enc.EncodeToString(bad)
			if _, err := s.Check(t0, v, alice); !errors.Is(err, ErrMalformed) {
				t.Errorf("Check with a %d-byte signature = %v, want ErrMalformed", len(bad), err)
			}
		}
	}
}

// TestLongestKeyIDVerifies pins that a key id of the longest length
// NewSigner accepts (64 bytes) names its key in states that verify, as the
// signing key and as a key kept for rotation.
func TestLongestKeyIDVerifies(t *testing.T) {
	ctx := context.Background()
	id := strings.Repeat("k", maxKIDLen)
	s := newSigner(t, []Key{{ID: id, Secret: secretA}}, nil)
	if err := s.Verify(ctx, t0, issue(t, s, t0, alice), alice); err != nil {
		t.Errorf("Verify with a %d-byte key id = %v, want nil", len(id), err)
	}
	rotated := newSigner(t, []Key{{ID: "new", Secret: secretB}, {ID: id, Secret: secretA}}, nil)
	if err := rotated.Verify(ctx, t0, issue(t, s, t0, alice), alice); err != nil {
		t.Errorf("Verify after rotation with a %d-byte key id = %v, want nil", len(id), err)
	}
}

// TestMemoryNonceStoreShrinkKeepsUsedNonces pins that the memory store,
// when it gives back the room a burst took (its map shrinks once the burst
// has expired), keeps every nonce not yet expired: a state used before
// the burst expired is still refused as a replay afterwards, by Consume
// and by Used.
func TestMemoryNonceStoreShrinkKeepsUsedNonces(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryNonceStore()
	if first, err := m.Consume(ctx, "victim", t0, t0.Add(2*time.Minute)); err != nil || !first {
		t.Fatalf("Consume(victim) = %v, %v; want true, nil", first, err)
	}
	for i := range 4096 {
		if _, err := m.Consume(ctx, "burst-"+strconv.Itoa(i), t0, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	later := t0.Add(time.Minute) // the burst has expired, the victim has not
	if first, err := m.Consume(ctx, "after", later, later.Add(time.Minute)); err != nil || !first {
		t.Fatalf("Consume(after) = %v, %v; want true, nil", first, err)
	}
	if n := m.Len(); n != 2 {
		t.Errorf("Len after the burst expired = %d, want 2", n)
	}
	if used, err := m.Used(ctx, "victim", later, t0.Add(2*time.Minute)); err != nil || !used {
		t.Errorf("Used(victim) after the burst expired = %v, %v; want true, nil", used, err)
	}
	if first, err := m.Consume(ctx, "victim", later, t0.Add(2*time.Minute)); err != nil || first {
		t.Errorf("replay of victim after the burst expired = %v, %v; want false, nil", first, err)
	}
}

// TestArgsSHA256CanonicalFormKnownAnswer pins the canonical form
// ArgsSHA256 documents, against an independent hash: sorted keys, no
// whitespace, numbers as written and strings without HTML escaping (so
// "<", ">" and "&" stay themselves, not \u003c and the like).
func TestArgsSHA256CanonicalFormKnownAnswer(t *testing.T) {
	for args, canon := range map[string]string{
		`{ "b" : "<a href='x'>&</a>", "a" : 12.50 }`: `{"a":12.50,"b":"<a href='x'>&</a>"}`,
		`["\u003c\u0026\u003e"]`:                     `["<&>"]`,
	} {
		got, err := ArgsSHA256([]byte(args))
		if err != nil {
			t.Fatalf("ArgsSHA256(%s) = %v", args, err)
		}
		sum := sha256.Sum256([]byte(canon))
		if want := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("ArgsSHA256(%s) = %s, want the hash of %s, %s", args, got, canon, want)
		}
	}
}
