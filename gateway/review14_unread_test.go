package gateway

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
)

// TestRefusedUnreadIsAudited: a request refused before its messages could
// be read (its Origin, a body too large or not JSON) gets one outcome
// record, without a tool, and reaches no downstream. Every decision is in
// the trail, the refusals an attacker probes with included.
func TestRefusedUnreadIsAudited(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink, MaxBodyBytes: 4096})
	big := call(`1`, "get_customer_record", `{"pad":"`+strings.Repeat("x", 5000)+`"}`)
	for _, tc := range []struct {
		name, auth, body string
		hdr              []string
		status           int
		code, detail     string
		subject          string
	}{
		{"origin", viewer, call(`1`, "get_customer_record", `{}`), []string{"Origin", "https://evil.example"}, 403, "FORBIDDEN", "Forbidden: Origin not allowed", ""},
		{"too_large", viewer, big, nil, 413, "INVALID_REQUEST", "body exceeds 4096 bytes", "viewer"},
		// The token is checked before the body is read (review27).
		{"too_large_unauthenticated", "", big, nil, 401, "UNAUTHENTICATED", "missing bearer token", ""},
		{"not_json", viewer, `{"jsonrpc":"2.0",`, nil, 400, "INVALID_REQUEST", "Parse error", "viewer"},
		{"not_json_unauthenticated", "", `{"jsonrpc":"2.0",`, nil, 401, "UNAUTHENTICATED", "missing bearer token", ""},
		{"batch_too_long", viewer, "[" + strings.Repeat(`1,`, 256) + `1]`, nil, 400, "INVALID_REQUEST", "more than 256 members", "viewer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink.mu.Lock()
			before := len(sink.evs)
			sink.mu.Unlock()
			received := len(rg.down.log())
			got := rg.post(t, tc.auth, tc.body, tc.hdr...)
			if got.status != tc.status {
				t.Fatalf("status %d %s, want %d", got.status, got.body, tc.status)
			}
			time.Sleep(20 * time.Millisecond)
			sink.mu.Lock()
			evs := slices.Clone(sink.evs[before:])
			sink.mu.Unlock()
			if len(evs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(evs), evs)
			}
			e := evs[0]
			if e.Phase != audit.PhaseOutcome || e.Allowed || e.Code != tc.code || !strings.Contains(e.Detail, tc.detail) || e.Tool != "" || e.Subject != tc.subject || e.CorrelationID == "" {
				t.Errorf("record %+v, want a denied outcome, code %s, detail with %q, no tool, subject %q", e, tc.code, tc.detail, tc.subject)
			}
			if !strings.Contains(got.body, e.CorrelationID) {
				t.Errorf("the answer %s does not name the record's correlation id %s", got.body, e.CorrelationID)
			}
			if n := len(rg.down.log()); n != received {
				t.Errorf("the downstream received %d requests, want none", n-received)
			}
		})
	}
	// An OPTIONS preflight from an origin not allowed is a refusal too.
	req, _ := http.NewRequest(http.MethodOptions, rg.url+"/mcp", nil)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	time.Sleep(20 * time.Millisecond)
	sink.mu.Lock()
	last := sink.evs[len(sink.evs)-1]
	sink.mu.Unlock()
	if resp.StatusCode != http.StatusForbidden || last.Code != "FORBIDDEN" || !strings.Contains(last.Detail, "Origin") {
		t.Errorf("preflight from a refused origin: %d, last record %+v", resp.StatusCode, last)
	}
}

// TestLimitRefusalDetailRecorded: a call refused by a cap has the reason
// in its record's detail, as the guard's records do.
func TestLimitRefusalDetailRecorded(t *testing.T) {
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 1, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink, Limiter: lim})
	for range 2 {
		rg.post(t, viewer, call(`1`, "get_customer_record", `{}`))
	}
	time.Sleep(20 * time.Millisecond)
	sink.mu.Lock()
	evs := slices.Clone(sink.evs)
	sink.mu.Unlock()
	var last audit.Event
	for _, e := range evs {
		if e.Code == "RATE_LIMIT_EXCEEDED" {
			last = e
		}
	}
	if !strings.Contains(last.Detail, "rate limit exceeded") {
		t.Errorf("the rate-limited call's record %+v has no reason in its detail", last)
	}
}
