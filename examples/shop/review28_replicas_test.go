package main

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview28ConfirmationAcrossReplicasOnce: three replicas on one Redis,
// a and b with one SHOP_MCP_CONFIRM_KEY and c with another. A confirmation
// asked for on a is refused on c (another key) without being used up, then
// sent sixteen times at once, alternating between a and b, and runs the
// write exactly once; a replay on b afterwards is refused.
func TestReview28ConfirmationAcrossReplicasOnce(t *testing.T) {
	rd := testsvc.StartRedis(t)
	key, other := make([]byte, 32), make([]byte, 32)
	for i := range key {
		key[i], other[i] = byte(i+1), byte(i+101)
	}
	withKey := func(k []byte) func(*config) {
		return func(c *config) { c.adminWrites, c.redisAddr, c.confirmKey = true, rd.Addr, k }
	}
	a, b, c := newStack(t, withKey(key), nil), newStack(t, withKey(key), nil), newStack(t, withKey(other), nil)
	const path = "/api/admin/products/RB-100/price"
	args := `{"sku":"RB-100","price":42.5}`
	state := firstRound(t, a, connect(t, a, sessionAdmin, noMRTR()), "admin_set_price", args)
	p := &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()}

	res, we := callRaw(t, connect(t, c, sessionAdmin, noMRTR()), p)
	if e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any); we != nil || e["code"] != "CONFIRMATION_REQUIRED" {
		t.Errorf("replica with another key: %v %s, want CONFIRMATION_REQUIRED", we, mustJSON(t, res))
	}

	sessions := []*mcp.ClientSession{connect(t, a, sessionAdmin, noMRTR()), connect(t, b, sessionAdmin, noMRTR())}
	const n = 16
	results := make([]*mcp.CallToolResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			q := *p // the go-sdk writes the params' _meta
			res, err := sessions[i%2].CallTool(t.Context(), &q)
			if err != nil {
				t.Errorf("copy %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	ran := 0
	for i, res := range results {
		if res == nil {
			continue
		}
		if !res.IsError {
			ran++
		} else if e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any); e["code"] != "CONFIRMATION_REQUIRED" {
			t.Errorf("copy %d: %s, want the result or CONFIRMATION_REQUIRED", i, mustJSON(t, res))
		}
	}
	q := *p
	res, _ = callRaw(t, sessions[1], &q)
	if e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any); e["code"] != "CONFIRMATION_REQUIRED" {
		t.Errorf("replay on b: %s", mustJSON(t, res))
	}
	writes := a.gw.count("PUT", path) + b.gw.count("PUT", path) + c.gw.count("PUT", path)
	if ran != 1 || writes != 1 {
		t.Errorf("one confirmation on two replicas: %d ran, %d gateway writes; want 1 and 1", ran, writes)
	}
}
