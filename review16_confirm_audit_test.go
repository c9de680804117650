package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestConfirmationDecisionsAudited: every decision about a confirmation
// leaves one outcome record with the code the caller got and a detail
// saying which decision it was: asked, accepted, declined, cancelled, no
// answer, replayed, accepted a nanosecond before the expiry, expired,
// forged, signed with a retired key, another caller's, for other
// arguments, malformed. No record and no log line holds the state or its
// signature.
func TestConfirmationDecisionsAudited(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }

	oldKey := confirm.Key{ID: "old", Secret: []byte("old-old-old-old-old-old-old-old-old-old!")}
	newKey := confirm.Key{ID: "new", Secret: []byte("new-new-new-new-new-new-new-new-new-new!")}
	nonces := confirm.NewMemoryNonceStore()
	signer := func(keys ...confirm.Key) *confirm.Signer {
		s, err := confirm.NewSigner(keys, &confirm.Options{Nonces: nonces})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pol, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}},
		WriteAllowlist: []string{"wipe"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	who := bob
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return who, nil })
	wrap := func(s *confirm.Signer) mcp.ToolHandler {
		g, err := mcpguard.New(pol, auth, &mcpguard.Options{Confirmer: s, Logger: log, Audit: sink, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		h, err := g.Wrap(&mcp.Tool{Name: "wipe", InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("wiped"), nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := wrap(signer(oldKey))
	args := `{"target":"db-1"}`
	var states []string
	ask := func() string {
		t.Helper()
		res, err := h(context.Background(), req("wipe", args))
		if err != nil || res.RequestState == "" {
			t.Fatalf("asking round: %v %s", err, mustJSON(res))
		}
		states = append(states, res.RequestState)
		return res.RequestState
	}
	type want struct{ code, detail string }
	var wants []want
	expect := func(res *mcp.CallToolResult, err error, w want) {
		t.Helper()
		if got := codeOf(t, res, err); got != w.code {
			t.Errorf("%s: code %q, want %q", w.detail, got, w.code)
		}
		wants = append(wants, w)
	}

	st := ask()
	wants = append(wants, want{"CONFIRMATION_REQUIRED", "confirmation requested"})
	res, err := confirmRound(h, "wipe", args, st, "")
	expect(res, err, want{"CONFIRMATION_REQUIRED", `user answered ""`})
	who = alice
	res, err = confirmRound(h, "wipe", args, st, "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrMismatch.Error()})
	who = bob
	res, err = confirmRound(h, "wipe", `{"target":"db-2"}`, st, "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrMismatch.Error()})
	// Another signature: one character of it changed.
	i := len(st) - 10
	forged := st[:i] + map[bool]string{true: "B", false: "A"}[st[i] == 'A'] + st[i+1:]
	res, err = confirmRound(h, "wipe", args, forged, "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrBadSignature.Error()})
	res, err = confirmRound(h, "wipe", args, "not a state", "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrMalformed.Error()})
	res, err = confirmRound(h, "wipe", args, st, "accept")
	expect(res, err, want{"", ""})
	res, err = confirmRound(h, "wipe", args, st, "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrReplayed.Error()})

	st = ask()
	wants = append(wants, want{"CONFIRMATION_REQUIRED", "confirmation requested"})
	res, err = confirmRound(h, "wipe", args, st, "decline")
	expect(res, err, want{"CONFIRMATION_REQUIRED", `user answered "decline"`})
	res, err = confirmRound(h, "wipe", args, st, "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrReplayed.Error()})
	st = ask()
	wants = append(wants, want{"CONFIRMATION_REQUIRED", "confirmation requested"})
	res, err = confirmRound(h, "wipe", args, st, "cancel")
	expect(res, err, want{"CONFIRMATION_REQUIRED", `user answered "cancel"`})

	// The expiry, to the nanosecond: asked at t0, accepted up to
	// t0+TTL (exclusive).
	st = ask()
	wants = append(wants, want{"CONFIRMATION_REQUIRED", "confirmation requested"})
	st2 := ask()
	wants = append(wants, want{"CONFIRMATION_REQUIRED", "confirmation requested"})
	setNow(t0.Add(confirm.DefaultTTL - time.Nanosecond))
	res, err = confirmRound(h, "wipe", args, st2, "accept")
	expect(res, err, want{"", ""})
	setNow(t0.Add(confirm.DefaultTTL))
	res, err = confirmRound(h, "wipe", args, st, "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrExpired.Error()})

	// Key rotation: a state signed with the old key is still accepted
	// while the old key is listed, and refused once it is retired.
	setNow(t0.Add(time.Hour))
	st = ask()
	wants = append(wants, want{"CONFIRMATION_REQUIRED", "confirmation requested"})
	st2 = ask()
	wants = append(wants, want{"CONFIRMATION_REQUIRED", "confirmation requested"})
	h = wrap(signer(newKey, oldKey))
	res, err = confirmRound(h, "wipe", args, st, "accept")
	expect(res, err, want{"", ""})
	h = wrap(signer(newKey))
	res, err = confirmRound(h, "wipe", args, st2, "accept")
	expect(res, err, want{"CONFIRMATION_REQUIRED", confirm.ErrUnknownKey.Error()})

	var outcomes []audit.Event
	for _, e := range sink.all() {
		if e.Phase == audit.PhaseOutcome {
			outcomes = append(outcomes, e)
		}
	}
	if len(outcomes) != len(wants) {
		t.Fatalf("%d outcome records, want %d", len(outcomes), len(wants))
	}
	for i, w := range wants {
		e := outcomes[i]
		if e.Code != w.code || !strings.Contains(e.Detail, w.detail) || (w.code == "") != e.Allowed {
			t.Errorf("record %d: allowed %v code %q detail %q; want code %q, detail with %q", i, e.Allowed, e.Code, e.Detail, w.code, w.detail)
		}
	}
	trail := mustJSON(sink.all()) + logs.String()
	for _, st := range append(states, forged) {
		p, sig, _ := strings.Cut(st, ".")
		for _, part := range []string{p, sig} {
			if strings.Contains(trail, part) {
				t.Errorf("the audit trail or the log holds a confirmation state's part %.20s…", part)
			}
		}
	}
}
