package gateway

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

// review60fbDown asks for a next round (input_required, requestState
// "st-1") of a refund without a requestState; a refund with one is
// refused, retryable, the first refuse times (as a guarded downstream's
// own cap, audit sink or nonce store refuses a confirmed round, its state
// not used up), then run.
type review60fbDown struct {
	refuse   int32
	nexts    atomic.Int32
	ran      atomic.Int32
	refusals atomic.Int32
}

func (d *review60fbDown) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			RequestState string `json:"requestState"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	id := string(msg.ID)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case msg.Params.RequestState == "":
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[],"resultType":"input_required",`+
			`"inputRequests":{"confirm":{"method":"elicitation/create","params":{}}},"requestState":"st-1"}}`)
	case d.nexts.Add(1) <= d.refuse:
		d.refusals.Add(1)
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32003,"message":"Upstream unavailable: the request state could not be checked; try again shortly",`+
			`"data":{"code":"UPSTREAM_UNAVAILABLE","retryable":true,"retry_after_seconds":1}}}`)
	default:
		d.ran.Add(1)
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"done"}]}}`)
	}
}

func review60fbCall(state string) string {
	extra := ""
	if state != "" {
		extra = `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"` + state + `"`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refund","arguments":{"amount":10}` + extra + `}}`
}

// TestReview60fbDownstreamRefusedNextRoundRetried: a guarded downstream
// (the library) refuses a confirmed next round retryably without using
// its state up (its nonce store or audit sink down, its own cap), and its
// docs say the same call with the same state and answer can succeed
// later. Through the gateway that retry is charged as a new call: under a
// rate of one refund a minute the user's confirmed write is refused 429
// by the cap its question used, the failure 9ca2933 fixes (DESIGN: the
// MRTR retry of one logical call counts once).
func TestReview60fbDownstreamRefusedNextRoundRetried(t *testing.T) {
	down := &review60fbDown{refuse: 1}
	ds := httptest.NewServer(down)
	t.Cleanup(ds.Close)
	g, err := New(ds.URL, DemoTokens(), &Options{Policy: review60cPolicy(t), Limiter: refundOnceAMinute(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := review60cServe(g, viewer, review60fbCall("")); status != 200 || !strings.Contains(body, "st-1") {
		t.Fatalf("first round: %d %s", status, body)
	}
	if status, body := review60cServe(g, viewer, review60fbCall("st-1")); !strings.Contains(body, "UPSTREAM_UNAVAILABLE") {
		t.Fatalf("next round, refused by the downstream: %d %s", status, body)
	}
	status, body := review60cServe(g, viewer, review60fbCall("st-1"))
	if status != 200 || !strings.Contains(body, "done") {
		t.Errorf("the confirmed round sent again, as the downstream asked: %d %s (ran %d); want 200 and run: "+
			"the gateway charged the logical call a second time", status, body, down.ran.Load())
	}
}

// TestReview60fbNextRoundAfterSetPolicy: SetPolicy's doc says a call is
// decided by the new policy. A next round whose first round was a free
// read, sent after SetPolicy made the tool a write costing 40 under a
// spend cap of 50 an hour, runs charged nothing: with another write of
// that tool (charged 40), two writes of 40 run under a cap of 50. The
// library binds the rule's class into its sealed state for this (mrtr.go:
// a next round whose tool the policy made a write since is another call,
// charged as one, not the uncharged next round of a read).
func TestReview60fbNextRoundAfterSetPolicy(t *testing.T) {
	down := &review60fbDown{}
	ds := httptest.NewServer(down)
	t.Cleanup(ds.Close)
	read, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "refund", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	write, err := policy.New(policy.Config{
		Tools:          []policy.ToolRule{{Name: "refund", Class: policy.Write, Cost: 40}},
		WriteAllowlist: []string{"refund"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Spend, Scope: limiter.User, Max: 50, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(ds.URL, DemoTokens(), &Options{Policy: read, Limiter: lim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	call := func(amount, state string) string {
		return strings.Replace(review60fbCall(state), `"amount":10`, `"amount":`+amount, 1)
	}
	if status, body := review60cServe(g, viewer, call("10", "")); status != 200 || !strings.Contains(body, "st-1") {
		t.Fatalf("first round (a read, free): %d %s", status, body)
	}
	if err := g.SetPolicy(write); err != nil {
		t.Fatal(err)
	}
	// A write of 40, asked and confirmed: the user's budget is 10 now.
	if status, body := review60cServe(g, viewer, call("11", "")); status != 200 || !strings.Contains(body, "st-1") {
		t.Fatalf("a write's first round: %d %s", status, body)
	}
	if status, body := review60cServe(g, viewer, call("11", "st-1")); status != 200 || !strings.Contains(body, "done") {
		t.Fatalf("a write's next round: %d %s", status, body)
	}
	status, body := review60cServe(g, viewer, call("10", "st-1"))
	if n := down.ran.Load(); n != 1 {
		t.Errorf("the read's next round, a write of 40 now, with 10 left under the cap: %d %s; "+
			"%d writes of 40 ran under a spend cap of 50, want 1 (SPEND_LIMIT_EXCEEDED)", status, body, n)
	}
}
