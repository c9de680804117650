package main

// Tests from review: malformed input lines, money totals, the spend
// budget's refill and the unknown-tool error, each driving the real binary
// with the helpers of main_test.go and raw_test.go.

import (
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

const reviewReason = "goodwill gesture for delay"

// TestOversizedRefundNotRetryable checks that a refund larger than the
// whole spend cap, which no wait can let through, is refused as not
// retryable and without retry_after_seconds: a model told to retry would
// retry the same refund for ever.
func TestOversizedRefundNotRetryable(t *testing.T) {
	cs, _ := connect(t, "", []string{"-session-cap", "1000", "-user-cap", "100"}, alice)
	_, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 150, "reason": reviewReason})
	if we == nil {
		t.Fatal("refund of 150 under a cap of 100: allowed, want refused")
	}
	d := errData(t, we)
	if we.Code != -32029 || d["code"] != "SPEND_LIMIT_EXCEEDED" {
		t.Fatalf("refund of 150 under a cap of 100: %d %q %v, want -32029 SPEND_LIMIT_EXCEEDED", we.Code, we.Message, d)
	}
	if d["retryable"] != false {
		t.Errorf("refund larger than the whole cap: data %v; want retryable: false (no wait can make it pass)", d)
	}
	if ra, ok := d["retry_after_seconds"]; ok {
		t.Errorf("refund larger than the whole cap: retry_after_seconds = %v, want none (the call can never succeed)", ra)
	}
}

// TestSpendCapRefillsContinuously checks the caps as documented (flag help,
// README): a bucket of -user-cap that refills continuously at -user-cap per
// -cap-window. Right after a refund of the whole cap, half the cap is
// refused; once half a window has passed, it is allowed.
func TestSpendCapRefillsContinuously(t *testing.T) {
	cs, _ := connect(t, "", []string{"-session-cap", "1000", "-user-cap", "100", "-cap-window", "2s"}, alice)
	start := time.Now()
	if _, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 100, "reason": reviewReason}); we != nil {
		t.Fatalf("first refund of 100 under a cap of 100: %v", we)
	}
	_, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00002", "amount": 50, "reason": reviewReason})
	if elapsed := time.Since(start); elapsed >= time.Second {
		t.Skipf("too slow to test the empty bucket (%v)", elapsed)
	}
	if we == nil || we.Code != -32029 {
		t.Errorf("refund of 50 right after one of the whole cap: %v, want -32029 (the bucket is empty)", we)
	}
	time.Sleep(time.Until(start.Add(1200 * time.Millisecond)))
	if _, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00002", "amount": 50, "reason": reviewReason}); we != nil {
		t.Errorf("refund of 50 more than half a window after the bucket emptied: %v, want allowed (60 refilled)", we)
	}
}

// TestRefundedTotalWholeCents: amounts are whole cents (the schema's
// multipleOf 0.01) and so is the running total: 0.10 + 0.20 reports
// refunded_total 0.3, not the float sum 0.30000000000000004.
func TestRefundedTotalWholeCents(t *testing.T) {
	cs, _ := connect(t, "", nil, alice)
	for _, amount := range []float64{0.1, 0.2} {
		if _, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": amount, "reason": reviewReason}); we != nil {
			t.Fatalf("refund of %v: %v", amount, we)
		}
	}
	got, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"})
	if we != nil {
		t.Fatal(we)
	}
	if total := got["customer"].(map[string]any)["refunded_total"]; total != 0.3 {
		t.Errorf("refunded_total after refunds of 0.10 and 0.20 = %v, want 0.3", total)
	}
}

// TestBadLineKeepsQueuedRefund: a client writes a refund and, right after
// it, a line that is not JSON. The refund is run and answered, and the bad
// line gets its own -32700 answer (JSON-RPC 2.0; the seed's server too
// logs it and keeps serving).
func TestBadLineKeepsQueuedRefund(t *testing.T) {
	s := hardeningStart(t)
	if _, err := io.WriteString(s.stdin, refundLine+"\n{not json\n"); err != nil {
		t.Fatal(err)
	}
	if !answered(s, "2") {
		t.Errorf("refund followed by a malformed line: the refund got no answer; stderr:\n%s", s.stderr)
	}
}

// TestBadLineKeepsAnswerOfRefundThatRan: as above, with the bad line about
// a millisecond after the refund, when the refund is already running:
// whenever it runs (its allowed outcome is in the audit trail), its answer
// is written, so the client is never left to guess whether money moved.
func TestBadLineKeepsAnswerOfRefundThatRan(t *testing.T) {
	delays := []time.Duration{time.Millisecond, 500 * time.Microsecond, 2 * time.Millisecond, 200 * time.Microsecond, 5 * time.Millisecond}
	for attempt := range 50 {
		auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
		s := startRaw(t, []string{"-audit", auditPath}, alice)
		s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, true)
		s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, false)
		if _, err := io.WriteString(s.stdin, refundLine+"\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delays[attempt%len(delays)])
		_, _ = io.WriteString(s.stdin, "{not json\n")
		ok := answered(s, "2")
		s.stdin.Close()
		_ = s.cmd.Wait()
		ran := 0
		for _, e := range readAudit(t, auditPath, audit.Filter{Tool: "trigger_refund"}) {
			if e.Phase == audit.PhaseOutcome && e.Allowed {
				ran++
			}
		}
		if ran > 0 && !ok {
			t.Fatalf("attempt %d: the refund ran (allowed outcome in the audit trail) but its answer was never written", attempt+1)
		}
	}
}

// TestBadLineKeepsServing: a line that is not a valid JSON-RPC message
// (not JSON, a bare number, an empty object, a wrong version tag, an
// object id, trailing data, a batch on a protocol without batching, an
// empty batch) is answered as JSON-RPC 2.0 (section 5.1) says, -32700
// Parse error or -32600 Invalid Request, with the request's id when it
// can be read and null otherwise, and the server goes on serving.
func TestBadLineKeepsServing(t *testing.T) {
	tests := []struct {
		name, line string
		code       int64
		id         string
	}{
		{"not_json", `{not json`, -32700, "null"},
		{"number", `42`, -32600, "null"},
		{"empty_object", `{}`, -32600, "null"},
		{"version_1_0", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, "5"},
		{"object_id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, "null"},
		{"trailing_data", `{"jsonrpc":"2.0","id":5,"method":"ping"} x`, -32700, "null"},
		{"batch_on_2025_11_25", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, -32600, "null"},
		{"empty_batch", `[]`, -32600, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := hardeningStart(t)
			if _, err := io.WriteString(s.stdin, tt.line+"\n"+`{"jsonrpc":"2.0","id":9,"method":"ping"}`+"\n"); err != nil {
				t.Fatal(err)
			}
			var got []string
			pinged := false
			timeout := time.After(10 * time.Second)
		loop:
			for !pinged {
				select {
				case line, ok := <-s.lines:
					if !ok {
						break loop
					}
					r := parseResponse(t, line)
					switch {
					case string(r.ID) == "9" && r.Error == nil:
						pinged = true
					case r.Error != nil:
						got = append(got, string(r.ID))
						if r.Error.Code != tt.code || string(r.ID) != tt.id {
							t.Errorf("the line %s: error %d %q id %s, want %d id %s", tt.line, r.Error.Code, r.Error.Message, r.ID, tt.code, tt.id)
						}
					default:
						t.Errorf("unexpected response %q", line)
					}
				case <-timeout:
					break loop
				}
			}
			if !pinged {
				t.Errorf("after the line %s the server stopped serving (ping unanswered); stderr:\n%s", tt.line, s.stderr)
			}
			if len(got) != 1 {
				t.Errorf("the line %s got %d error responses, want 1", tt.line, len(got))
			}
			if err := s.finish(t); err != nil {
				t.Errorf("exit after stdin closed: %v", err)
			}
		})
	}
}

const refundLine = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger_refund","arguments":{"customer_id":"CUST-00001","amount":25,"reason":"late delivery refund"}}}`

// answered reads s's stdout until the response with id arrives (true) or
// stdout closes or 10 seconds pass (false).
func answered(s *rawServer, id string) bool {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return false
			}
			var r response
			if json.Unmarshal([]byte(line), &r) == nil && string(r.ID) == id {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// TestUnknownToolError checks the README's row for an unknown tool: -32601
// with the go-sdk's message and no data (go-sdk v1.8.0 rewrites every
// -32601 a handler returns), while the audit trail keeps the refusal as
// TOOL_NOT_FOUND with a correlation id.
func TestUnknownToolError(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cs, _ := connect(t, "", []string{"-audit", auditPath}, alice)
	_, we := call(t, cs, "delete_customer", map[string]any{"customer_id": "CUST-00001"})
	if we == nil || we.Code != -32601 {
		t.Fatalf("unknown tool: %v, want -32601", we)
	}
	if len(we.Data) != 0 {
		t.Errorf("unknown tool: data %s, want none (README)", we.Data)
	}
	cs.Close()
	evs := readAudit(t, auditPath, audit.Filter{Tool: "delete_customer"})
	if len(evs) != 1 || evs[0].Code != "TOOL_NOT_FOUND" || evs[0].Allowed || evs[0].CorrelationID == "" {
		t.Errorf("audit records of the unknown tool: %+v, want one refused TOOL_NOT_FOUND outcome with a correlation id", evs)
	}
}
