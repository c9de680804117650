package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// A REST call naming two sessions (X-Session-Id twice) is ambiguous, as two
// Authorization headers are: a proxy that reads the last one and the
// server the first would disagree about whose budget it spends and in
// which session it is recorded. It is refused 400, audited, and spends
// neither session's budget.
func TestReview21TwoSessionHeadersAreRefused(t *testing.T) {
	ta := newTestApp(t, nil) // 5 calls per session
	base := startHTTP(t, ta)
	for _, sids := range [][]string{{"a", "b"}, {"a", "a"}, {"a", ""}} {
		req, err := http.NewRequest(http.MethodPost, base+"/tools/search_docs/call", strings.NewReader(`{"arguments":{"query":""}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer token-alice")
		for _, s := range sids {
			req.Header.Add("X-Session-Id", s)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := restReply{status: resp.StatusCode, body: body}
		e, _ := body["error"].(map[string]any)
		if r.status != http.StatusBadRequest || r.code() != "INVALID_ARGUMENTS" || e["correlation_id"] == nil {
			t.Errorf("X-Session-Id %q: %d %v, want 400 INVALID_ARGUMENTS with a correlation id", sids, r.status, body)
		}
	}
	no := false
	if evs := ta.events(t, audit.Filter{Subject: "alice", Allowed: &no}); len(evs) != 3 {
		t.Errorf("%d denial records of alice, want 3", len(evs))
	}
	for _, sid := range []string{"a", "b"} {
		for i := 1; i <= 5; i++ {
			if r := restPost(t, base, "search_docs", "token-alice", sid, `{"arguments":{"query":""}}`); r.status != http.StatusOK {
				t.Fatalf("session %s call %d: %d %v (a refused call spent its budget)", sid, i, r.status, r.body)
			}
		}
	}
}
