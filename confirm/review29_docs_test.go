package confirm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview29ZeroTicket pins the Ticket doc: "The zero Ticket consumes
// nothing and reports ErrMalformed", from Consume and from Used alike.
func TestReview29ZeroTicket(t *testing.T) {
	var tk Ticket
	ctx := context.Background()
	now := time.Now()
	if err := tk.Used(ctx, now); !errors.Is(err, ErrMalformed) {
		t.Errorf("zero Ticket Used = %v, want ErrMalformed", err)
	}
	if err := tk.Consume(ctx, now); !errors.Is(err, ErrMalformed) {
		t.Errorf("zero Ticket Consume = %v, want ErrMalformed", err)
	}
}

// TestReview29ZeroSignerVerifiesNothing pins the Signer doc: "The zero
// Signer is not usable (it has no key: nothing verifies the states it
// issues)". Its Check and Verify refuse every state, its own and a real
// signer's, with an error rather than a panic.
func TestReview29ZeroSignerVerifiesNothing(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	c := Claims{Subject: "alice", Tool: "refund", ArgsSHA256: "00"}
	real, err := NewSigner([]Key{{ID: "k1", Secret: secretA}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var zero Signer
	states := []string{}
	if st, err := real.Issue(now, c); err == nil {
		states = append(states, st)
	} else {
		t.Fatal(err)
	}
	if st, err := zero.Issue(now, c); err == nil {
		states = append(states, st)
	}
	for _, st := range states {
		if _, err := zero.Check(now, st, c); err == nil {
			t.Errorf("zero Signer Check(%q): nil error", st)
		}
		if err := zero.Verify(ctx, now, st, c); err == nil {
			t.Errorf("zero Signer Verify(%q): nil error", st)
		}
		if err := real.Verify(ctx, now, st, c); st != states[0] && err == nil {
			t.Errorf("a real Signer verified the zero Signer's state %q", st)
		}
	}
}

// TestReview29UnmadeMemoryNonceStore: a MemoryNonceStore not made by
// NewMemoryNonceStore (documented as not usable) was taken by NewSigner,
// and its Consume panicked on the request path (a write to a nil map) at
// the first confirmation. NewSigner now refuses it, as limiter.New refuses
// an unmade MemoryStore, and its Consume and Used return an error (a store
// that cannot decide: the confirmation is refused) instead of panicking.
func TestReview29UnmadeMemoryNonceStore(t *testing.T) {
	for _, m := range []*MemoryNonceStore{new(MemoryNonceStore), nil} {
		if _, err := NewSigner([]Key{{ID: "k1", Secret: secretA}}, &Options{Nonces: m}); err == nil {
			t.Errorf("NewSigner with the MemoryNonceStore %p not made by NewMemoryNonceStore: nil error", m)
		}
		now := time.Unix(1_800_000_000, 0)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%p: panicked: %v", m, p)
				}
			}()
			if first, err := m.Consume(context.Background(), "n", now, now.Add(time.Minute)); err == nil || first {
				t.Errorf("%p: Consume = %v, %v; want false and an error", m, first, err)
			}
			if used, err := m.Used(context.Background(), "n", now, now.Add(time.Minute)); err == nil {
				t.Errorf("%p: Used = %v, nil error; want an error", m, used)
			}
		}()
	}
}

// TestReview29NewSignerRefusals pins NewSigner's documented refusals.
func TestReview29NewSignerRefusals(t *testing.T) {
	long := make([]byte, 64)
	for i := range long {
		long[i] = 'k'
	}
	for name, tc := range map[string]struct {
		keys []Key
		opts *Options
	}{
		"no_keys":      {nil, nil},
		"empty_id":     {[]Key{{ID: "", Secret: secretA}}, nil},
		"id_65":        {[]Key{{ID: string(long) + "k", Secret: secretA}}, nil},
		"repeated_id":  {[]Key{{ID: "a", Secret: secretA}, {ID: "a", Secret: secretA}}, nil},
		"short_secret": {[]Key{{ID: "a", Secret: secretA[:MinSecretLen-1]}}, nil},
		"negative_ttl": {[]Key{{ID: "a", Secret: secretA}}, &Options{TTL: -time.Second}},
		"sub_second":   {[]Key{{ID: "a", Secret: secretA}}, &Options{TTL: 999 * time.Millisecond}},
	} {
		if _, err := NewSigner(tc.keys, tc.opts); err == nil {
			t.Errorf("%s: NewSigner: nil error", name)
		}
	}
	s, err := NewSigner([]Key{{ID: string(long), Secret: secretA}}, &Options{TTL: time.Second})
	if err != nil {
		t.Fatalf("64-byte id, TTL 1s: %v", err)
	}
	if s.TTL() != time.Second {
		t.Errorf("TTL() = %v, want 1s", s.TTL())
	}
	d, err := NewSigner([]Key{{ID: "a", Secret: secretA}}, &Options{})
	if err != nil || d.TTL() != DefaultTTL {
		t.Errorf("zero TTL: %v, %v; want DefaultTTL", d.TTL(), err)
	}
}

// TestReview29AnswerAndAsk pins Answer's and Ask's docs.
func TestReview29AnswerAndAsk(t *testing.T) {
	if a, ok := Answer(nil); ok || a != "" {
		t.Errorf("Answer(nil) = %q, %v", a, ok)
	}
	for action, want := range map[string]bool{"accept": true, "decline": true, "cancel": true, "ACCEPT": false, "": false, "yes": false} {
		p := &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{InputKey: &mcp.ElicitResult{Action: action}}}
		a, ok := Answer(p)
		if ok != want || (ok && a != action) || (!ok && a != "") {
			t.Errorf("Answer(action %q) = %q, %v; want ok %v", action, a, ok, want)
		}
	}
	res := Ask("Run x", "st")
	if len(res.Content) != 0 || res.RequestState != "st" || len(res.InputRequests) != 1 {
		t.Fatalf("Ask = %+v", res)
	}
	ep, ok := res.InputRequests[InputKey].(*mcp.ElicitParams)
	if !ok || ep.Message != "Run x" || ep.Mode != "form" {
		t.Errorf("Ask's input request = %#v", res.InputRequests[InputKey])
	}
}
