package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

func reviewLimiter(t *testing.T, scope limiter.Scope, max float64) *limiter.Limiter {
	t.Helper()
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: scope, Max: max, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// TestSessionLimitPerCallerWithoutSessionID: a per-session cap gives every caller its own budget, also without an
// Mcp-Session-Id (stateless HTTP, the go-sdk's default): one user's calls
// must not use up another's.
func TestSessionLimitPerCallerWithoutSessionID(t *testing.T) {
	rg := newRig(t, &Options{Limiter: reviewLimiter(t, limiter.Session, 1)})
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Fatalf("viewer's first call: %d %s", got.status, got.body)
	}
	if got := rg.post(t, admin, call(`2`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Errorf("admin's first call, in no session of the viewer's: status %d, want 200 (the viewer used up admin's per-session budget): %s", got.status, got.body)
	}
}

// TestHijackAttemptChargesNothing: a request refused because its Mcp-Session-Id belongs to another principal
// is never forwarded and must not be charged to that session's budget, or
// anyone who learns a session id could starve it.
func TestHijackAttemptChargesNothing(t *testing.T) {
	rg := newRig(t, &Options{Limiter: reviewLimiter(t, limiter.Session, 2)})
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", ""), "Mcp-Session-Id", "sess-v"); got.status != http.StatusOK {
		t.Fatalf("viewer opens sess-v: %d %s", got.status, got.body)
	}
	if got := rg.post(t, admin, call(`2`, "get_customer_record", ""), "Mcp-Session-Id", "sess-v"); got.status != http.StatusNotFound {
		t.Fatalf("admin on viewer's session: %d %s, want 404", got.status, got.body)
	}
	if got := rg.post(t, viewer, call(`3`, "get_customer_record", ""), "Mcp-Session-Id", "sess-v"); got.status != http.StatusOK {
		t.Errorf("viewer's second call in its own session: status %d, want 200 (the refused hijack was charged to sess-v): %s", got.status, got.body)
	}
}

// TestHeaderMismatchChargesNothing: a request refused locally because its Mcp-Name header contradicts its
// body (never forwarded) takes nothing from the caller's rate budget.
func TestHeaderMismatchChargesNothing(t *testing.T) {
	rg := newRig(t, &Options{Limiter: reviewLimiter(t, limiter.User, 1)})
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", ""), "Mcp-Name", "other_tool"); got.status != http.StatusBadRequest {
		t.Fatalf("mismatched Mcp-Name: %d %s, want 400", got.status, got.body)
	}
	if n := len(rg.down.log()); n != 0 {
		t.Fatalf("the refused request reached the downstream")
	}
	if got := rg.post(t, viewer, call(`2`, "get_customer_record", "")); got.status != http.StatusOK {
		t.Errorf("first well-formed call: status %d, want 200 (the refused malformed request used the budget): %s", got.status, got.body)
	}
}

// TestArgLimitUnicodeFold: two argument names equal under Unicode case folding, whose byte lengths
// differ (U+017F, long s, folds to "s"), make the field unreadable:
// encoding/json, a plausible downstream decoder, would match the second to
// the limited field and keep its value.
func TestArgLimitUnicodeFold(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = []policy.ToolRule{{Name: "book_seats", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "seats", Max: 10}}}}
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, &Options{Policy: pol})
	args := `{"seats":1,"\u017feats":500}`
	got := rg.post(t, viewer, call(`1`, "book_seats", args))
	if got.status == http.StatusOK {
		for _, b := range rg.down.bodies() {
			var p struct {
				Params struct {
					Arguments struct {
						Seats float64 `json:"seats"`
					} `json:"arguments"`
				} `json:"params"`
			}
			json.Unmarshal([]byte(b), &p)
			t.Errorf("forwarded %s: encoding/json reads seats=%v, over the limit of 10", b, p.Params.Arguments.Seats)
		}
		t.Fatalf("status %d, want 403 (argument names equal under case folding must make the field unreadable)", got.status)
	}
}

// TestSessionFIFOBounded: session ids ended with DELETE must not accumulate in the eviction order
// of a table that never fills.
func TestSessionFIFOBounded(t *testing.T) {
	s := newSessions()
	const n = 3 * maxSessions
	for i := range n {
		id := "sess-" + strconv.Itoa(i)
		s.bind(id, "u")
		s.forget(id)
	}
	if len(s.owner) != 0 {
		t.Fatalf("%d live bindings, want 0", len(s.owner))
	}
	slots := len(s.graves.fifo) - s.graves.head
	for _, h := range s.held {
		slots += len(h.fifo) - h.head
	}
	for _, h := range s.buried {
		slots += len(h.fifo) - h.head
	}
	if slots > maxSessions {
		t.Errorf("the queues hold %d slots after %d ended sessions with none live; want at most %d (memory grows without bound)", slots, n, maxSessions)
	}
}

// TestHealthHidesUpstreamCredentials: /healthz answers without authentication: the upstream URL it shows has
// no query, which may hold a key. (An upstream URL with user information is
// refused by New: TestNewRefusesUpstreamUserInfo.)
func TestHealthHidesUpstreamCredentials(t *testing.T) {
	g, err := New("http://127.0.0.1:1/mcp?key=s3cr3t-key", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, g)
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), "s3cr3t-key") || !strings.Contains(string(b), "127.0.0.1:1/mcp") {
		t.Errorf("unauthenticated /healthz reveals the upstream's query, or shows no upstream: %s", b)
	}
}

// TestUnderscoreSessionHeaderNotForwarded: a client's "Mcp_Session_Id" is not forwarded: servers that fold "_" into
// "-" (CGI, WSGI) would read it as the session id the gateway checked
// under its real name only.
func TestUnderscoreSessionHeaderNotForwarded(t *testing.T) {
	rg := newRig(t, nil)
	if got := rg.post(t, viewer, call(`1`, "get_customer_record", "")); got.header.Get("Mcp-Session-Id") != "sess-1" {
		t.Fatalf("open: %d %v", got.status, got.header)
	}
	before := len(rg.down.log())
	rg.post(t, admin, call(`2`, "get_customer_record", ""), "Mcp_Session_Id", "sess-1")
	for _, r := range rg.down.log()[before:] {
		for k, v := range r.Header {
			if k != "Mcp-Session-Id" && strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "Mcp-Session-Id") {
				t.Errorf("admin's request reached the downstream with %s: %q, naming the viewer's session unchecked", k, v)
			}
		}
	}
}

// TestInvalidToolsCallAudited: a tools/call refused as undecidable (a duplicate params.name, the classic
// smuggling attempt) gets an outcome event like every other denial.
func TestInvalidToolsCallAudited(t *testing.T) {
	var mu sync.Mutex
	var events []audit.Event
	sink := audit.SinkFunc(func(_ context.Context, e *audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, *e)
		return nil
	})
	rg := newRig(t, &Options{Audit: sink})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","name":"admin_reset_key"}}`
	if got := rg.post(t, viewer, body); got.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", got.status, got.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 {
		t.Errorf("a refused tools/call left no audit event")
	}
}

// TestRefusedNotificationNotAnswered: a tools/call notification (no id) refused for its params gets no answer:
// 204 alone, and no member in a batch (seed design point 5, JSON-RPC 2.0
// §4.1).
func TestRefusedNotificationNotAnswered(t *testing.T) {
	rg := newRig(t, nil)
	note := `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{}}}`
	if got := rg.post(t, viewer, note); got.status != http.StatusNoContent || got.body != "" {
		t.Errorf("refused notification: status %d body %q, want 204 and no body", got.status, got.body)
	}
	got := rg.post(t, viewer, `[`+note+`,`+call(`1`, "get_customer_record", "")+`]`)
	var answers []json.RawMessage
	if err := json.Unmarshal([]byte(got.body), &answers); err != nil {
		t.Fatalf("batch answer %q: %v", got.body, err)
	}
	if len(answers) != 1 {
		t.Errorf("batch answered %d members, want 1 (the notification must get none): %s", len(answers), got.body)
	}
}

// TestTokenTableEdgeCases: ParseTokens refuses tables that cannot mean what the operator wrote.
func TestTokenTableEdgeCases(t *testing.T) {
	tests := []struct{ name, json, why string }{
		{name: "duplicate_token", json: `{"tok-1":"admin","tok-1":"viewer"}`,
			why: "the same token twice: one role is dropped without a word"},
		{name: "duplicate_role_member", json: `{"tok-1":{"sub":"a","role":"viewer","role":"admin"}}`,
			why: "role given twice: the last wins silently"},
		{name: "token_not_token68", json: `{"tok@1":"admin"}`,
			why: "a token the gateway's bearer parser (token68) always refuses: configured but unusable"},
		{name: "subject_padded", json: `{"tok-1":{"sub":" alice ","role":"viewer"}}`,
			why: "a subject with outer spaces: HTTP trims header values, so the downstream sees \"alice\" while the gateway keys sessions and limits by \" alice \""},
		{name: "subject_blank", json: `{"tok-1":{"sub":"  ","role":"viewer"}}`,
			why: "a blank subject reaches the downstream as an empty X-Mcp-Gateway-Subject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseTokens([]byte(tt.json)); err == nil {
				t.Errorf("ParseTokens(%s) = nil error: %s", tt.json, tt.why)
			}
		})
	}
}
