package confirm

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	t0      = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	secretA = bytes.Repeat([]byte("a"), 32)
	secretB = bytes.Repeat([]byte("b"), 32)
	alice   = Claims{Subject: "alice", Tool: "refund", ArgsSHA256: mustHash("{\"amount\":12.5}")}
)

func mustHash(args string) string {
	h, err := ArgsSHA256([]byte(args))
	if err != nil {
		panic(err)
	}
	return h
}

func newSigner(t *testing.T, keys []Key, opts *Options) *Signer {
	t.Helper()
	s, err := NewSigner(keys, opts)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	return s
}

func issue(t *testing.T, s *Signer, now time.Time, c Claims) string {
	t.Helper()
	st, err := s.Issue(now, c)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return st
}

func TestNewSignerErrors(t *testing.T) {
	tests := []struct {
		name string
		keys []Key
		opts *Options
	}{
		{"no_keys", nil, nil},
		{"empty_id", []Key{{ID: "", Secret: secretA}}, nil},
		{"long_id", []Key{{ID: strings.Repeat("k", 65), Secret: secretA}}, nil},
		{"short_secret", []Key{{ID: "k1", Secret: secretA[:31]}}, nil},
		{"duplicate_id", []Key{{ID: "k1", Secret: secretA}, {ID: "k1", Secret: secretB}}, nil},
		{"negative_ttl", []Key{{ID: "k1", Secret: secretA}}, &Options{TTL: -time.Second}},
		{"sub_second_ttl", []Key{{ID: "k1", Secret: secretA}}, &Options{TTL: 500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSigner(tt.keys, tt.opts)
			if err == nil {
				t.Fatalf("NewSigner(%v) = %v, nil; want error", tt.name, s)
			}
			if strings.Contains(err.Error(), string(secretA[:8])) {
				t.Errorf("error %q contains the secret", err)
			}
		})
	}
}

func TestNewSignerCopiesKeys(t *testing.T) {
	secret := bytes.Clone(secretA)
	s := newSigner(t, []Key{{ID: "k1", Secret: secret}}, nil)
	st := issue(t, s, t0, alice)
	copy(secret, secretB)
	if err := s.Verify(context.Background(), t0, st, alice); err != nil {
		t.Errorf("Verify after caller mutated its secret slice = %v, want nil", err)
	}
}

func TestIssueVerify(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	st := issue(t, s, t0, alice)
	if len(st) > 200 {
		t.Errorf("state is %d bytes, want compact (<= 200)", len(st))
	}
	if err := s.Verify(context.Background(), t0.Add(DefaultTTL-time.Second), st, alice); err != nil {
		t.Fatalf("Verify = %v, want nil", err)
	}
	if other := issue(t, s, t0, alice); other == st {
		t.Errorf("two states for the same claims are equal; nonce missing")
	}
}

func TestIssueRejectsEmptyClaims(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	for _, c := range []Claims{
		{Tool: "t", ArgsSHA256: "h"},
		{Subject: "s", ArgsSHA256: "h"},
		{Subject: "s", Tool: "t"},
		{Subject: strings.Repeat("s", 4000), Tool: "t", ArgsSHA256: "h"},
	} {
		if st, err := s.Issue(t0, c); err == nil {
			t.Errorf("Issue(%.20v) = %q, nil; want error", c, st)
		}
	}
}

func TestIssueRandFailure(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, &Options{Rand: bytes.NewReader(make([]byte, 20))})
	if _, err := s.Issue(t0, alice); err != nil {
		t.Fatalf("first Issue: %v", err)
	}
	if st, err := s.Issue(t0, alice); err == nil {
		t.Errorf("Issue with exhausted random source = %q, nil; want error", st)
	}
}

// tamper flips one bit of the decoded part (0 payload, 1 signature) at byte i.
func tamper(t *testing.T, state string, part, i int) string {
	t.Helper()
	parts := strings.Split(state, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[part])
	if err != nil {
		t.Fatal(err)
	}
	b[i] ^= 1
	parts[part] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func TestVerifyFailures(t *testing.T) {
	ctx := context.Background()
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	st := issue(t, s, t0, alice)
	sameID := newSigner(t, []Key{{ID: "k1", Secret: secretB}}, nil)
	otherID := newSigner(t, []Key{{ID: "k2", Secret: secretA}}, nil)
	payload, sig, _ := strings.Cut(st, ".")
	tests := []struct {
		name   string
		signer *Signer
		now    time.Time
		state  string
		claims Claims
		want   error
	}{
		{"empty", s, t0, "", alice, ErrMalformed},
		{"no_dot", s, t0, payload, alice, ErrMalformed},
		{"two_dots", s, t0, st + ".x", alice, ErrMalformed},
		{"bad_base64", s, t0, "!!!." + sig, alice, ErrMalformed},
		{"padded_base64", s, t0, payload + "=." + sig, alice, ErrMalformed},
		{"short_signature", s, t0, payload + "." + sig[:10], alice, ErrMalformed},
		{"truncated_payload", s, t0, payload[:20] + "." + sig, alice, ErrMalformed},
		{"too_long", s, t0, strings.Repeat("A", 5000) + "." + sig, alice, ErrMalformed},
		{"wrong_version", s, t0, tamper(t, st, 0, 0), alice, ErrMalformed},
		{"unknown_key", otherID, t0, st, alice, ErrUnknownKey},
		{"same_kid_other_secret", sameID, t0, st, alice, ErrBadSignature},
		{"tampered_expiry", s, t0, tamper(t, st, 0, 5), alice, ErrBadSignature},
		{"tampered_nonce", s, t0, tamper(t, st, 0, 12), alice, ErrBadSignature},
		{"tampered_signature", s, t0, tamper(t, st, 1, 0), alice, ErrBadSignature},
		{"expired_at_ttl", s, t0.Add(DefaultTTL), st, alice, ErrExpired},
		{"expired_after", s, t0.Add(time.Hour), st, alice, ErrExpired},
		{"other_subject", s, t0, st, Claims{"mallory", alice.Tool, alice.ArgsSHA256}, ErrMismatch},
		{"other_tool", s, t0, st, Claims{alice.Subject, "delete_all", alice.ArgsSHA256}, ErrMismatch},
		{"other_args", s, t0, st, Claims{alice.Subject, alice.Tool, mustHash(`{"amount":1250}`)}, ErrMismatch},
		{"empty_claims", s, t0, st, Claims{}, ErrMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.signer.Verify(ctx, tt.now, tt.state, tt.claims)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify(%s) = %v, want %v", tt.name, err, tt.want)
			}
			for _, leak := range []string{string(secretA[:8]), string(secretB[:8]), "alice", "mallory", alice.ArgsSHA256} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q leaks %q", err, leak)
				}
			}
		})
	}
	// None of the failures above consumed the nonce: the owner still can.
	if err := s.Verify(ctx, t0, st, alice); err != nil {
		t.Fatalf("owner Verify after failed attempts = %v, want nil", err)
	}
	if err := s.Verify(ctx, t0, st, alice); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second Verify = %v, want %v", err, ErrReplayed)
	}
}

func TestVerifyTTLOption(t *testing.T) {
	ctx := context.Background()
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, &Options{TTL: 10 * time.Second})
	if s.TTL() != 10*time.Second {
		t.Errorf("TTL() = %v, want 10s", s.TTL())
	}
	st := issue(t, s, t0, alice)
	if err := s.Verify(ctx, t0.Add(10*time.Second), st, alice); !errors.Is(err, ErrExpired) {
		t.Errorf("Verify at expiry = %v, want %v", err, ErrExpired)
	}
	st = issue(t, s, t0, alice)
	if err := s.Verify(ctx, t0.Add(9*time.Second), st, alice); err != nil {
		t.Errorf("Verify before expiry = %v, want nil", err)
	}
}

func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := Key{ID: "2026-01", Secret: secretA}, Key{ID: "2026-07", Secret: secretB}
	before := newSigner(t, []Key{oldKey}, nil)
	oldStates := []string{issue(t, before, t0, alice), issue(t, before, t0, alice)}

	nonces := NewMemoryNonceStore()
	during := newSigner(t, []Key{newKey, oldKey}, &Options{Nonces: nonces})
	if err := during.Verify(ctx, t0, oldStates[0], alice); err != nil {
		t.Errorf("old-key state during rotation: Verify = %v, want nil", err)
	}
	newState := issue(t, during, t0, alice)
	if !strings.Contains(mustDecode(t, newState), newKey.ID) {
		t.Errorf("state issued during rotation is not signed with the first key %q", newKey.ID)
	}

	after := newSigner(t, []Key{newKey}, &Options{Nonces: nonces})
	if err := after.Verify(ctx, t0, oldStates[1], alice); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("old-key state after removal: Verify = %v, want %v", err, ErrUnknownKey)
	}
	if err := after.Verify(ctx, t0, newState, alice); err != nil {
		t.Errorf("new-key state after removal: Verify = %v, want nil", err)
	}
}

func mustDecode(t *testing.T, state string) string {
	t.Helper()
	p, _, _ := strings.Cut(state, ".")
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVerifyConcurrentOnce races many retries of one state: exactly one wins.
func TestVerifyConcurrentOnce(t *testing.T) {
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, nil)
	st := issue(t, s, t0, alice)
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Verify(context.Background(), t0, st, alice) })
	}
	wg.Wait()
	ok, replayed := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrReplayed):
			replayed++
		default:
			t.Errorf("Verify = %v", err)
		}
	}
	if ok != 1 || replayed != len(errs)-1 {
		t.Errorf("concurrent Verify: %d ok, %d replayed; want 1, %d", ok, replayed, len(errs)-1)
	}
}

func TestVerifyStoreError(t *testing.T) {
	down := errors.New("connection refused")
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, &Options{
		Nonces: NonceStoreFunc(func(context.Context, string, time.Time, time.Time) (bool, error) { return false, down }),
	})
	err := s.Verify(context.Background(), t0, issue(t, s, t0, alice), alice)
	if !errors.Is(err, ErrStore) || !errors.Is(err, down) {
		t.Errorf("Verify with failing store = %v, want ErrStore wrapping the store error", err)
	}
}

func TestVerifyPassesExpiryToStore(t *testing.T) {
	var got []time.Time
	s := newSigner(t, []Key{{ID: "k1", Secret: secretA}}, &Options{
		Nonces: NonceStoreFunc(func(_ context.Context, nonce string, now, exp time.Time) (bool, error) {
			if len(nonce) != 32 {
				t.Errorf("nonce %q: want 32 hex chars", nonce)
			}
			got = append(got, now, exp)
			return true, nil
		}),
	})
	now := t0.Add(30 * time.Second)
	if err := s.Verify(context.Background(), now, issue(t, s, t0, alice), alice); err != nil {
		t.Fatal(err)
	}
	want := []time.Time{now, t0.Add(DefaultTTL)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("store arguments (-want +got):\n%s", diff)
	}
}

func TestMemoryNonceStore(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryNonceStore()
	consume := func(nonce string, now, exp time.Time) bool {
		t.Helper()
		first, err := m.Consume(ctx, nonce, now, exp)
		if err != nil {
			t.Fatal(err)
		}
		return first
	}
	exp := t0.Add(time.Minute)
	if !consume("n1", t0, exp) {
		t.Errorf("first Consume(n1) = false, want true")
	}
	if consume("n1", t0.Add(59*time.Second), exp) {
		t.Errorf("second Consume(n1) = true, want false")
	}
	if consume("n2", t0, t0) {
		t.Errorf("Consume of a nonce already expired = true, want false")
	}
	for i := range 1000 {
		consume(string(rune('a'+i%26))+strings.Repeat("x", i), t0, exp.Add(time.Duration(i+1)*time.Millisecond))
	}
	if got := m.Len(); got != 1001 {
		t.Errorf("Len() = %d, want 1001", got)
	}
	// A call whose now was read earlier than another's (or before the
	// clock stepped back) gets no nonce that expired by the latest now seen.
	if consume("n4", t0, t0.Add(30*time.Second)) {
		t.Errorf("Consume(n4) expiring before the latest now seen = true, want false")
	}
	// Later calls evict everything that has expired.
	later := exp.Add(2 * time.Second)
	consume("n3", later, later.Add(time.Minute))
	if got := m.Len(); got != 1 {
		t.Errorf("Len() after expiry = %d, want 1 (only n3)", got)
	}
	if !consume("n1", later, later.Add(time.Minute)) {
		t.Errorf("Consume(n1) after its expiry = false, want true (forgotten)")
	}
}

func TestArgsSHA256(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"key_order_and_space", `{"b":1,"a":[1, 2]}`, ` {"a":[1,2],"b":1} `, true},
		{"nested_key_order", `{"x":{"b":1,"a":2}}`, `{"x":{"a":2,"b":1}}`, true},
		{"escapes", `{"s":"\u003c\u0041"}`, `{"s":"<A"}`, true},
		{"empty_is_null", ``, `null`, true},
		{"number_literal", `{"n":12.5}`, `{"n":12.50}`, false},
		{"different_value", `{"n":1}`, `{"n":2}`, false},
		{"null_vs_object", `null`, `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, ea := ArgsSHA256([]byte(tt.a))
			hb, eb := ArgsSHA256([]byte(tt.b))
			if ea != nil || eb != nil {
				t.Fatalf("ArgsSHA256 errors: %v, %v", ea, eb)
			}
			if (ha == hb) != tt.same {
				t.Errorf("ArgsSHA256(%s) == ArgsSHA256(%s) is %v, want %v", tt.a, tt.b, ha == hb, tt.same)
			}
			if len(ha) != 64 {
				t.Errorf("hash %q is not 64 hex chars", ha)
			}
		})
	}
	for _, bad := range []string{`{"a":`, `{"a":1} {}`, `{"a":1}x`, `nul`} {
		if h, err := ArgsSHA256([]byte(bad)); err == nil {
			t.Errorf("ArgsSHA256(%s) = %q, nil; want error", bad, h)
		}
	}
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// FuzzVerify checks that arbitrary states never panic and never verify. The
// nonce source is fixed so that every fuzzing worker knows the one good state.
func FuzzVerify(f *testing.F) {
	s, err := NewSigner([]Key{{ID: "k1", Secret: secretA}}, &Options{Rand: zeroReader{}})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := s.Issue(t0, alice)
	f.Add(good)
	f.Add("")
	f.Add(".")
	f.Add("AQ.AA")
	f.Fuzz(func(t *testing.T, state string) {
		if state == good {
			return
		}
		if err := s.Verify(context.Background(), t0, state, alice); err == nil {
			t.Fatalf("Verify(%q) = nil for a state never issued", state)
		}
	})
}
