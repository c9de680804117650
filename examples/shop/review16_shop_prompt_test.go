package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview16PromptShowsPlainAmounts: the human asked to confirm an admin
// write reads the amount in the prompt. It was printed as the model spelled
// it: a price of 99.90 sent as 9.99e1 read "set the price of RB-300 to
// 9.99e1 EUR", which a person skimming approves as 9.99. The validator
// accepts any JSON spelling of a number (a JSON Schema number is a value),
// so the prompt must show the value: a price in euros with its two
// decimals, a stock as a plain integer. The gateway gets the same plain
// value the person saw.
func TestReview16PromptShowsPlainAmounts(t *testing.T) {
	st := newStack(t, func(c *config) { c.adminWrites = true }, nil)
	var msg string
	cs := connect(t, st, sessionAdmin, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	for _, tc := range []struct {
		name, tool, args string
		prompt, body     string // in the prompt; the gateway's request body
	}{
		{"price_exponent", "admin_set_price", `{"sku":"RB-300","price":9.99e1}`, "to 99.90 EUR", `{"price":99.90}`},
		{"price_large_exponent", "admin_set_price", `{"sku":"RB-300","price":1e5}`, "to 100000.00 EUR", `{"price":100000.00}`},
		{"price_small_exponent", "admin_set_price", `{"sku":"RB-300","price":1E-2}`, "to 0.01 EUR", `{"price":0.01}`},
		{"price_one_decimal", "admin_set_price", `{"sku":"RB-300","price":34.5}`, "to 34.50 EUR", `{"price":34.50}`},
		{"stock_exponent", "admin_set_stock", `{"sku":"RB-300","stock":1e3}`, "to 1000 units", `{"stock":1000}`},
		{"stock_decimal", "admin_set_stock", `{"sku":"RB-300","stock":10.0}`, "to 10 units", `{"stock":10}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg = ""
			n := len(st.gw.recorded())
			ok(t, cs, tc.tool, json.RawMessage(tc.args))
			if !strings.Contains(msg, tc.prompt) {
				t.Errorf("CallTool(%s, %s): the person was asked %q, want it to say %q", tc.tool, tc.args, msg, tc.prompt)
			}
			var body string
			for _, r := range st.gw.recorded()[n:] {
				if r.Method == "PUT" {
					body = strings.TrimSpace(r.Body)
				}
			}
			if body != tc.body {
				t.Errorf("CallTool(%s, %s): the gateway got %s, want %s", tc.tool, tc.args, body, tc.body)
			}
		})
	}
}
