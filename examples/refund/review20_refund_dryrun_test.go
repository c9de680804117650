package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dryRunRefund asks for a dry run of a refund and returns its result (a
// tool error too) as a map with its isError, or the JSON-RPC error.
func dryRunRefund(t *testing.T, cs *mcp.ClientSession, id string, amount float64) (map[string]any, bool, *jsonrpc.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger_refund", Meta: mcp.Meta{dryrun.MetaKey: true},
		Arguments: map[string]any{"customer_id": id, "amount": amount, "reason": "checking before refunding"}})
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			t.Fatalf("dry run of trigger_refund(%s, %v): %v", id, amount, err)
		}
		return nil, false, we
	}
	var m map[string]any
	if err := json.Unmarshal(mustMarshal(t, res.StructuredContent), &m); err != nil {
		t.Fatal(err)
	}
	return m, res.IsError, nil
}

// TestReview20DryRunMeetsTheCaps: the README's dry-run promises, through
// the binary. A dry run that fits the caps previews the refund; one that
// does not is the SPEND_LIMIT_EXCEEDED the refund would get (retryable
// with a wait, or not at all above the whole cap), with its handler not
// run and a record of dry_run true and cost 0; previews take nothing, so
// the real refunds that fit still pass; a preview beyond the paid total
// is the refusal, whatever the caps.
func TestReview20DryRunMeetsTheCaps(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cs, _ := connect(t, "", []string{"-session-cap", "100", "-user-cap", "1000", "-audit", auditPath}, alice)

	if got, isErr, we := dryRunRefund(t, cs, "CUST-00001", 100); we != nil || isErr || got["status"] != "dry_run" {
		t.Fatalf("dry run of the whole cap: %v %v %v, want a dry_run preview", got, isErr, we)
	}
	_, _, we := dryRunRefund(t, cs, "CUST-00001", 100.01)
	if we == nil || we.Code != -32029 {
		t.Fatalf("dry run above the whole cap: %v, want -32029", we)
	}
	if d := errData(t, we); d["code"] != "SPEND_LIMIT_EXCEEDED" || d["retryable"] != false || d["retry_after_seconds"] != nil {
		t.Errorf("dry run above the whole cap: data %v, want SPEND_LIMIT_EXCEEDED, not retryable, no wait", d)
	}
	for i := 0; i < 5; i++ { // previews take nothing
		if _, _, we := dryRunRefund(t, cs, "CUST-00001", 60); we != nil {
			t.Fatalf("dry run %d of 60: %v", i, we)
		}
	}
	if got, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 60, "reason": "item arrived damaged"}); we != nil || got["status"] != "processed" {
		t.Fatalf("refund of 60 after five previews: %v %v, want processed", got, we)
	}
	_, _, we = dryRunRefund(t, cs, "CUST-00001", 60)
	if we == nil || we.Code != -32029 {
		t.Fatalf("dry run of 60 with about 40 left: %v, want -32029", we)
	}
	if d := errData(t, we); d["code"] != "SPEND_LIMIT_EXCEEDED" || d["retryable"] != true || d["retry_after_seconds"] == nil {
		t.Errorf("dry run of 60 with about 40 left: data %v, want SPEND_LIMIT_EXCEEDED, retryable, a wait", d)
	}
	if got, we := call(t, cs, "trigger_refund", map[string]any{"customer_id": "CUST-00001", "amount": 39, "reason": "item arrived damaged"}); we != nil || got["status"] != "processed" {
		t.Fatalf("refund of 39 after a refused preview: %v %v, want processed", got, we)
	}
	// Beyond the paid total: the refusal, costing nothing, even with the caps used up.
	if got, isErr, we := dryRunRefund(t, cs, "CUST-00002", 480.01); we != nil || !isErr || got["status"] != "refused" || got["refundable"] != 480.0 {
		t.Errorf("dry run beyond the paid total: %v %v %v, want the refusal (isError, refundable 480)", got, isErr, we)
	}
	if r, _ := refundedTotal(t, cs, "CUST-00001"); r != 99.0 {
		t.Errorf("CUST-00001 refunded_total %v, want 99 (60 + 39; previews refund nothing)", r)
	}

	// The outcome records are written after the answers: read the trail
	// once the server is gone.
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	var dry, refused int
	for _, e := range readAudit(t, auditPath, audit.Filter{Tool: "trigger_refund"}) {
		if !e.DryRun {
			continue
		}
		dry++
		if e.Cost != 0 || e.Phase == audit.PhaseIntent {
			t.Errorf("dry-run record %+v: want an outcome only, cost 0", e)
		}
		if e.Code == "SPEND_LIMIT_EXCEEDED" {
			refused++
		}
	}
	if dry != 9 || refused != 2 {
		t.Errorf("audit: %d dry-run records, %d of them SPEND_LIMIT_EXCEEDED; want 9 and 2", dry, refused)
	}
}

// TestReview20DryRunsAmongRefundsRace: dry runs racing with real refunds
// for the last of a cap take nothing from it: 40 refunds of 10 under a cap
// of 200, among 40 dry runs of 10, still make exactly 20 refunds. A dry
// run is a preview or the cap's refusal, never a refund. In process, so
// that -race sees the guard, the limiter's peeks and the store together.
func TestReview20DryRunsAmongRefundsRace(t *testing.T) {
	cs := startInProcess(t, config{sessionCap: 100000, userCap: 200, capWindow: 1000 * time.Hour})
	var mu sync.Mutex
	var wg sync.WaitGroup
	var processed, capped, previews, dryCapped int
	for range 40 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			got, isError, we := refundResult(t, cs, "CUST-00001", 10)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case we != nil && we.Code == -32029:
				capped++
			case we == nil && !isError && got["status"] == "processed":
				processed++
			default:
				t.Errorf("refund of 10: %v %v %v", got, isError, we)
			}
		}()
		go func() {
			defer wg.Done()
			got, isError, we := dryRunRefund(t, cs, "CUST-00001", 10)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case we != nil && we.Code == -32029:
				dryCapped++
			case we == nil && !isError && got["status"] == "dry_run":
				previews++
			default:
				t.Errorf("dry run of 10: %v %v %v", got, isError, we)
			}
		}()
	}
	wg.Wait()
	if processed != 20 || capped != 20 || previews+dryCapped != 40 {
		t.Errorf("40 refunds and 40 dry runs of 10 under a cap of 200: %d processed, %d capped, %d previews, %d dry runs capped; want 20, 20 and 40 dry runs answered",
			processed, capped, previews, dryCapped)
	}
	if refunded, _ := refundedTotal(t, cs, "CUST-00001"); refunded != 200.0 {
		t.Errorf("refunded_total %v, want 200", refunded)
	}
	if _, _, we := dryRunRefund(t, cs, "CUST-00001", 10); we == nil || we.Code != -32029 {
		t.Errorf("dry run with the cap used up: %v, want -32029", we)
	}
}
