package main

import "testing"

// TestReview58dRefusalMessagesSayWhatTheSeedSays: the seed's error contract
// ("Contrato de errores", and its demo's output) has each refusal say what
// was refused and how to lift it:
//
//	WRITE_NOT_ALLOWED: "Tool 'create_ticket' is a write tool and is not in
//	allowed_write_tools. Add it to server.yaml's allowlist to enable it."
//	RATE_LIMIT_EXCEEDED detail: "Session '...' exceeded its rate/spend cap
//	(5 calls or 10 cost units per 60s window)."
//
// The refusal of a write off the allowlist named no tool ("write tool is
// not on the write allowlist") and a rate refusal no cap ("rate limit per
// session reached"). The library's messages now name both; the README says
// which key of server.yaml holds the allowlist.
func TestReview58dRefusalMessagesSayWhatTheSeedSays(t *testing.T) {
	ta := newTestApp(t, nil)
	o := ta.call(t, "token-alice", "s1", "create_ticket", ticketArgs())
	if o.code != "WRITE_NOT_ALLOWED" {
		t.Fatalf("got %+v, want WRITE_NOT_ALLOWED", o)
	}
	e, _ := o.content["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if msg != `tool "create_ticket" is a write tool and is not on the write allowlist` {
		t.Errorf("WRITE_NOT_ALLOWED message %q does not name the tool, as the seed's does", msg)
	}
	var last outcome
	for i := 0; i < 6; i++ {
		last = ta.call(t, "token-bob", "burst", "search_docs", map[string]any{"query": ""})
	}
	if last.code != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("6th call: %+v, want RATE_LIMIT_EXCEEDED", last)
	}
	e, _ = last.content["error"].(map[string]any)
	msg, _ = e["message"].(string)
	if msg != "rate limit per session reached (5 calls per 1m)" {
		t.Errorf("RATE_LIMIT_EXCEEDED message %q does not state the cap (the seed's: \"5 calls or 10 cost units per 60s window\")", msg)
	}
}
