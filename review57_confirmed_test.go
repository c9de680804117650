package mcpguard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
)

// r57Records lists the records of tool in sink as phase/allowed/code/detail.
func r57Records(sink *memSink, tool string) []string {
	var recs []string
	for _, e := range sink.all() {
		if e.Tool == tool {
			recs = append(recs, fmt.Sprint(e.Phase, "/", e.Allowed, "/", e.Code, "/", e.Detail))
		}
	}
	return recs
}

// TestReview57ConfirmedCallsSaySo: a write a human confirmed left intent and
// outcome records identical to one nobody was asked about (detail ""):
// the audit trail could not show that a dangerous write was approved, and
// on protocol 2026-07-28 the asking round, under another correlation id,
// could not be joined to it. Each record of a confirmed call now says
// "confirmed by the user" (before any other detail), through a Guard
// (a multi round-trip, an older client's elicitation) and through the
// stand-alone Confirm and WriteAhead steps; the asking round and a decline
// do not.
func TestReview57ConfirmedCallsSaySo(t *testing.T) {
	const (
		asked     = "outcome/false/CONFIRMATION_REQUIRED/confirmation requested"
		intent    = "intent/true//confirmed by the user"
		confirmed = "outcome/true//confirmed by the user"
	)
	t.Run("multi round-trip", func(t *testing.T) {
		sink := &memSink{}
		h, ask, s := askWipe(t, testSigner(t, nil), sink)
		if _, err := confirmRound(h, "wipe", `{}`, ask.RequestState, "accept"); err != nil || s.ran != 1 {
			t.Fatalf("the confirmed round: %v, ran %d", err, s.ran)
		}
		if got, want := fmt.Sprint(r57Records(sink, "wipe")), fmt.Sprint([]string{asked, intent, confirmed}); got != want {
			t.Errorf("records %s\nwant %s", got, want)
		}
	})
	t.Run("declined", func(t *testing.T) {
		sink := &memSink{}
		h, ask, _ := askWipe(t, testSigner(t, nil), sink)
		if _, err := confirmRound(h, "wipe", `{}`, ask.RequestState, "decline"); err != nil {
			t.Fatal(err)
		}
		want := []string{asked, `outcome/false/CONFIRMATION_REQUIRED/user answered "decline"`}
		if got := fmt.Sprint(r57Records(sink, "wipe")); got != fmt.Sprint(want) {
			t.Errorf("records %s\nwant %s", got, want)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}},
			WriteAllowlist: []string{"wipe"}})
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Confirmer: testSigner(t, nil), Logger: quiet, Audit: sink})
		if err != nil {
			t.Fatal(err)
		}
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		var s stub
		srv.AddTool(&mcp.Tool{Name: "wipe", InputSchema: map[string]any{"type": "object"}}, s.handle)
		if err := g.Install(srv); err != nil {
			t.Fatal(err)
		}
		cs := connectVersion(t, srv, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			},
		}, "2025-11-25")
		if _, err := call(t, cs, "wipe", map[string]any{}); err != nil || s.ran != 1 {
			t.Fatalf("wipe: %v, ran %d", err, s.ran)
		}
		if got, want := fmt.Sprint(r57Records(sink, "wipe")), fmt.Sprint([]string{intent, confirmed}); got != want {
			t.Errorf("records %s\nwant %s", got, want)
		}
	})
	t.Run("stand-alone steps", func(t *testing.T) {
		pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}},
			WriteAllowlist: []string{"wipe"}})
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		opts := &mcpguard.Options{Logger: quiet}
		conf, err := mcpguard.Confirm(testSigner(t, nil), pol, opts)
		if err != nil {
			t.Fatal(err)
		}
		ahead, err := mcpguard.WriteAhead(sink, pol, opts)
		if err != nil {
			t.Fatal(err)
		}
		var s stub
		h := mcpguard.Chain(mustAudit(t, sink, opts), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol), conf, ahead)(s.handle)
		ask, err := h(context.Background(), req("wipe", `{}`))
		if err != nil || ask.RequestState == "" {
			t.Fatalf("asking round: %v %s", err, mustJSON(ask))
		}
		if _, err := confirmRound(h, "wipe", `{}`, ask.RequestState, "accept"); err != nil || s.ran != 1 {
			t.Fatalf("the confirmed round: %v, ran %d", err, s.ran)
		}
		if got, want := fmt.Sprint(r57Records(sink, "wipe")), fmt.Sprint([]string{asked, intent, confirmed}); got != want {
			t.Errorf("records %s\nwant %s", got, want)
		}
	})
}
