package main

import (
	"context"
	"encoding/json"
	"io"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/internal/testsvc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// accepted is the answer of a user who accepts.
func accepted() mcp.InputResponseMap {
	return mcp.InputResponseMap{confirm.InputKey: &mcp.ElicitResult{Action: "accept"}}
}

// firstRound calls an admin write with a client that does not answer
// input requests itself, checks that it asks for a confirmation and ran
// nothing, and returns the signed state.
func firstRound(t *testing.T, st *stack, cs *mcp.ClientSession, tool string, args string) string {
	t.Helper()
	puts := st.gw.count("PUT", "/api/admin/products/RB-100/price")
	res, we := callRaw(t, cs, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if we != nil {
		t.Fatalf("first round: %v", we)
	}
	if res.InputRequests == nil || res.RequestState == "" || res.IsError {
		t.Fatalf("first round: %s, want an input request with a state", mustJSON(t, res))
	}
	if st.gw.count("PUT", "/api/admin/products/RB-100/price") != puts {
		t.Fatal("the write ran before it was confirmed")
	}
	return res.RequestState
}

// TestAdminWriteConfirmation: an admin write runs only with the user's
// accepted confirmation, bound to the caller, the tool and the exact
// arguments, and once.
func TestAdminWriteConfirmation(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	grace := connect(t, st, sessionAdmin, noMRTR())
	linus := connect(t, st, sessionSuper, noMRTR())
	const path = "/api/admin/products/RB-100/price"
	args := `{"sku":"RB-100","price":149.99}`

	// A model cannot confirm by itself.
	if e := toolErr(t, grace, "admin_set_price", json.RawMessage(`{"sku":"RB-100","price":149.99,"confirm":true}`)); e["code"] != "INVALID_ARGUMENTS" {
		t.Errorf("confirm argument: %v", e)
	}

	state := firstRound(t, st, grace, "admin_set_price", args)
	for _, tc := range []struct {
		name  string
		cs    *mcp.ClientSession
		tool  string
		args  string
		resp  mcp.InputResponseMap
		state string
	}{
		{"other_arguments", grace, "admin_set_price", `{"sku":"RB-100","price":0.01}`, accepted(), state},
		{"other_tool", grace, "admin_set_stock", `{"sku":"RB-100","stock":149}`, accepted(), state},
		{"other_caller", linus, "admin_set_price", args, accepted(), state},
		{"no_answer", grace, "admin_set_price", args, nil, state},
		{"forged_state", grace, "admin_set_price", args, accepted(), state[:len(state)-4] + "AAAA"},
	} {
		res, we := callRaw(t, tc.cs, &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args), RequestState: tc.state, InputResponses: tc.resp})
		if we != nil {
			t.Fatalf("%s: %v", tc.name, we)
		}
		e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any)
		if !res.IsError || e["code"] != "CONFIRMATION_REQUIRED" {
			t.Errorf("%s: %s, want CONFIRMATION_REQUIRED", tc.name, mustJSON(t, res))
		}
	}
	if n := st.gw.count("PUT", path); n != 0 {
		t.Fatalf("refused confirmations ran the write %d times", n)
	}

	// The owner's confirmation survived those attempts, and works once.
	res, we := callRaw(t, grace, &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()})
	if we != nil || res.IsError {
		t.Fatalf("confirmed call: %v %s", we, mustJSON(t, res))
	}
	if got := toMap(t, res.StructuredContent)["price"]; got != 149.99 || st.gw.price("RB-100") != 149.99 {
		t.Errorf("confirmed call: price %v, gateway %v", got, st.gw.price("RB-100"))
	}
	res, _ = callRaw(t, grace, &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()})
	if e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any); e["code"] != "CONFIRMATION_REQUIRED" {
		t.Errorf("replayed confirmation: %s", mustJSON(t, res))
	}
	if n := st.gw.count("PUT", path); n != 1 {
		t.Errorf("the write ran %d times, want once", n)
	}
}

// TestAdminWriteDeclined: the client's user declines; nothing runs.
func TestAdminWriteDeclined(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	var asked atomic.Int32
	cs := connect(t, st, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	e := toolErr(t, cs, "admin_disable_user", map[string]any{"userId": "u-1002", "reason": "test"})
	if e["code"] != "CONFIRMATION_REQUIRED" || asked.Load() != 1 {
		t.Errorf("declined: %v, asked %d times", e, asked.Load())
	}
	if n := st.gw.count("POST", "/api/admin/users/u-1002/disable"); n != 0 {
		t.Errorf("a declined write ran %d times", n)
	}
}

// TestConfirmationAcrossReplicas: with --redis, two replicas sharing the
// key and the nonce store honour each other's confirmations, once between
// them. (The seed's nonce store was per process.)
func TestConfirmationAcrossReplicas(t *testing.T) {
	rd := testsvc.StartRedis(t)
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	mod := func(c *config) { c.adminWrites, c.redisAddr, c.confirmKey = true, rd.Addr, key }
	a, b := newStack(t, mod, nil), newStack(t, mod, nil)
	args := `{"sku":"RB-100","price":99.5}`
	state := firstRound(t, a, connect(t, a, sessionAdmin, noMRTR()), "admin_set_price", args)

	p := &mcp.CallToolParams{Name: "admin_set_price", Arguments: json.RawMessage(args), RequestState: state, InputResponses: accepted()}
	res, we := callRaw(t, connect(t, b, sessionAdmin, noMRTR()), p)
	if we != nil || res.IsError {
		t.Fatalf("replica b with a's confirmation: %v %s", we, mustJSON(t, res))
	}
	res, _ = callRaw(t, connect(t, a, sessionAdmin, noMRTR()), p)
	if e, _ := toMap(t, res.StructuredContent)["error"].(map[string]any); e["code"] != "CONFIRMATION_REQUIRED" {
		t.Errorf("replica a replaying the confirmation b used: %s", mustJSON(t, res))
	}
	if a.gw.count("PUT", "/api/admin/products/RB-100/price") != 0 || b.gw.count("PUT", "/api/admin/products/RB-100/price") != 1 {
		t.Error("the write did not run exactly once, on b")
	}

	// Without a shared key, --redis is refused at start.
	cfg := defaultConfig()
	cfg.gateway, cfg.redisAddr = a.gwURL, rd.Addr
	if _, err := newShop(cfg, io.Discard, nil); err == nil {
		t.Error("--redis without " + confirmKeyEnv + " started")
	}
}

// TestAdminWriteOldClientOverHTTP: a client on 2025-11-25 over stateless
// HTTP cannot be sent an elicitation, so its admin write is refused and
// nothing runs (stdio clients on that version are asked: see TestStdio).
func TestAdminWriteOldClientOverHTTP(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	cs, err := connectHTTP(context.Background(), st.mcpURL, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if e := toolErr(t, cs, "admin_set_price", map[string]any{"sku": "RB-100", "price": 5}); e["code"] != "CONFIRMATION_REQUIRED" {
		t.Errorf("old client over HTTP: %v", e)
	}
	if n := st.gw.count("PUT", "/api/admin/products/RB-100/price"); n != 0 {
		t.Errorf("the unconfirmed write ran %d times", n)
	}
}
