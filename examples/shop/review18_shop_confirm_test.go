package main

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview18ConfirmationRaceRunsOnce: one accepted confirmation sent
// sixteen times at once (a client that retries eagerly, or a replay racing
// the first use) runs the admin write exactly once; every other copy is
// CONFIRMATION_REQUIRED and reaches no gateway. Run with -race.
func TestReview18ConfirmationRaceRunsOnce(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	grace := connect(t, st, sessionAdmin, noMRTR())
	const path = "/api/admin/products/RB-100/price"
	args := `{"sku":"RB-100","price":77.70}`
	state := firstRound(t, st, grace, "admin_set_price", args)

	const n = 16
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := grace.CallTool(t.Context(), &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()})
			if err != nil {
				t.Errorf("copy %d: %v", i, err)
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	ran, refused := 0, 0
	for i, res := range results {
		if res == nil {
			continue
		}
		if !res.IsError {
			ran++
			continue
		}
		if e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any); e["code"] == "CONFIRMATION_REQUIRED" {
			refused++
		} else {
			t.Errorf("copy %d: %s, want the result or CONFIRMATION_REQUIRED", i, mustJSON(t, res))
		}
	}
	if ran != 1 || refused != n-1 {
		t.Errorf("%d copies of one confirmation: %d ran, %d refused; want 1 and %d", n, ran, refused, n-1)
	}
	if got := st.gw.count("PUT", path); got != 1 {
		t.Errorf("the gateway got %d writes, want 1", got)
	}
}
