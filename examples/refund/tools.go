package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// customerIDSchema is the schema of customer_id, shared by both customer tools.
func customerIDSchema() map[string]any {
	return map[string]any{
		"type":        "string",
		"pattern":     "^CUST-[A-Z0-9]{5}$",
		"description": `Customer id: "CUST-" and 5 upper-case letters or digits, e.g. CUST-00001.`,
	}
}

// The tools. Schemas are strict: the guard validates arguments against them
// before a handler runs (no coercion, unknown fields refused).
func customerTools() []*mcp.Tool {
	return []*mcp.Tool{
		{
			Name:        "get_customer_record",
			Description: "Look up a customer record by id. A well-formed id that does not exist is a successful result with found: false.",
			InputSchema: map[string]any{
				"type":                 "object",
				"properties":           map[string]any{"customer_id": customerIDSchema()},
				"required":             []string{"customer_id"},
				"additionalProperties": false,
			},
			OutputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"found":       map[string]any{"type": "boolean"},
					"customer_id": map[string]any{"type": "string"},
					"customer":    map[string]any{"type": "object"},
				},
				"required": []string{"found", "customer_id"},
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		},
		{
			Name:        "trigger_refund",
			Description: "Refund amount to a customer. A write tool: capped per session and per caller, and audited before it runs.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"customer_id": customerIDSchema(),
					"amount": map[string]any{
						"type": "number", "exclusiveMinimum": 0, "maximum": maxRefund, "multipleOf": 0.01,
						"description": "Amount to refund: a number greater than 0, in whole cents, at most 1000000.",
					},
					"reason": map[string]any{"type": "string", "minLength": 10, "maxLength": 1000, "description": "Why the refund is made; at least 10 characters."},
				},
				"required":             []string{"customer_id", "amount", "reason"},
				"additionalProperties": false,
			},
			OutputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"found":       map[string]any{"type": "boolean"},
					"customer_id": map[string]any{"type": "string"},
					"refund_id":   map[string]any{"type": "string"},
					"amount":      map[string]any{"type": "number"},
					"status":      map[string]any{"type": "string"},
				},
				"required": []string{"found", "customer_id"},
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: false},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// maxRefund bounds one refund, so that every valid amount is a finite
// float64 (1e400 would not be) and a plausible one.
const maxRefund = 1_000_000

// customer is one in-memory record. Money is kept in whole cents (the
// schema allows amounts in cents only, up to maxRefund), so that totals add
// up exactly; RefundedTotal is filled from refundedCents for output.
type customer struct {
	ID            string  `json:"customer_id"`
	Name          string  `json:"name"`
	Email         string  `json:"email"`
	Plan          string  `json:"plan"`
	RefundedTotal float64 `json:"refunded_total"`

	refundedCents int64
}

// toCents converts a validated amount (a multiple of 0.01, at most
// maxRefund) to whole cents.
func toCents(amount float64) int64 { return int64(math.Round(amount * 100)) }

// fromCents converts cents to the amount shown, the float64 nearest to it.
func fromCents(cents int64) float64 { return float64(cents) / 100 }

// store holds the demo's state. It is safe for concurrent use.
type store struct {
	mu        sync.Mutex
	customers map[string]*customer
	keys      map[string]int // API key id -> rotations
	refunds   int
}

func newStore() *store {
	return &store{
		customers: map[string]*customer{
			"CUST-00001": {ID: "CUST-00001", Name: "Ada Lovelace", Email: "ada@example.com", Plan: "pro"},
			"CUST-00002": {ID: "CUST-00002", Name: "Alan Turing", Email: "alan@example.com", Plan: "basic"},
		},
		keys: map[string]int{"KEY-PRIMARY": 0, "KEY-SECONDARY": 0},
	}
}

// exists reports whether customer id exists. The spend cost of a refund to
// a customer that does not exist is 0: nothing is refunded.
func (s *store) exists(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.customers[id]
	return ok
}

func (s *store) get(id string) (customer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.customers[id]
	if !ok {
		return customer{}, false
	}
	out := *c
	out.RefundedTotal = fromCents(c.refundedCents)
	return out, true
}

func (s *store) refund(id string, amount float64) (refundID string, total float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.customers[id]
	if !ok {
		return "", 0, false
	}
	s.refunds++
	c.refundedCents += toCents(amount)
	return fmt.Sprintf("RF-%06d", s.refunds), fromCents(c.refundedCents), true
}

func (s *store) resetKey(id string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.keys[id]
	if !ok {
		return 0, false
	}
	s.keys[id] = n + 1
	return n + 1, true
}

func (s *store) keyIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.keys))
	for k := range s.keys {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	return ids
}

// refundCost is the spend cost of a trigger_refund call: its amount, or 0
// for a customer that does not exist. args are validated, numbers are
// json.Number.
func (s *store) refundCost(args map[string]any) (float64, error) {
	id, _ := args["customer_id"].(string)
	if !s.exists(id) {
		return 0, nil
	}
	n, ok := args["amount"].(json.Number)
	if !ok {
		return 0, fmt.Errorf("amount is %T, want json.Number", args["amount"])
	}
	return n.Float64()
}

// decode unmarshals the (already validated) arguments of req into v.
func decode(req *mcp.CallToolRequest, v any) error {
	if req.Params == nil || len(req.Params.Arguments) == 0 {
		return fmt.Errorf("no arguments")
	}
	return json.Unmarshal(req.Params.Arguments, v)
}

// result returns v as structured content and as JSON text.
func result(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

func (s *store) getCustomerRecord(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		CustomerID string `json:"customer_id"`
	}
	if err := decode(req, &in); err != nil {
		return nil, err
	}
	c, ok := s.get(in.CustomerID)
	if !ok {
		return result(map[string]any{"found": false, "customer_id": in.CustomerID})
	}
	return result(map[string]any{"found": true, "customer_id": c.ID, "customer": c})
}

func (s *store) triggerRefund(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		CustomerID string  `json:"customer_id"`
		Amount     float64 `json:"amount"`
		Reason     string  `json:"reason"`
	}
	if err := decode(req, &in); err != nil {
		return nil, err
	}
	if !(in.Amount > 0 && in.Amount <= maxRefund) { // the schema guarantees it; never refund 0
		return nil, fmt.Errorf("amount out of range after validation")
	}
	if dryrun.FromContext(ctx) {
		// A dry run (the guard asked for one): what the refund would do,
		// in the tool's output shape, with nothing refunded.
		if _, ok := s.get(in.CustomerID); !ok {
			return result(map[string]any{"found": false, "customer_id": in.CustomerID})
		}
		return result(map[string]any{
			"found":       true,
			"customer_id": in.CustomerID,
			"refund_id":   dryrun.NewID(),
			"amount":      in.Amount,
			"status":      "dry_run",
		})
	}
	refundID, total, ok := s.refund(in.CustomerID, in.Amount)
	if !ok {
		return result(map[string]any{"found": false, "customer_id": in.CustomerID})
	}
	return result(map[string]any{
		"found":          true,
		"customer_id":    in.CustomerID,
		"refund_id":      refundID,
		"amount":         in.Amount,
		"status":         "processed",
		"refunded_total": total,
	})
}

// addCustomerTools registers the customer tools of s on server. With
// strayPrints, each handler also prints a debugging line to stdout, as a
// careless handler would: stdout isolation sends it to stderr.
func addCustomerTools(server *mcp.Server, s *store, strayPrints bool) {
	tools := customerTools()
	server.AddTool(tools[0], printing(strayPrints, s.getCustomerRecord))
	server.AddTool(tools[1], printing(strayPrints, s.triggerRefund))
}

func printing(on bool, h mcp.ToolHandler) mcp.ToolHandler {
	if !on {
		return h
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Println("debug: stray print to stdout from the", req.Params.Name, "handler")
		return h(ctx, req)
	}
}
