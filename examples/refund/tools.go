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
			Description: "Refund amount to a customer, never more in all than the customer paid: a refund beyond it is refused (isError, status refused, with what is left to refund). A write tool: capped per session and per caller, and audited before it runs.",
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
					"found":          map[string]any{"type": "boolean"},
					"customer_id":    map[string]any{"type": "string"},
					"refund_id":      map[string]any{"type": "string"},
					"amount":         map[string]any{"type": "number"},
					"status":         map[string]any{"type": "string", "enum": []string{"processed", "dry_run", "refused"}},
					"refunded_total": map[string]any{"type": "number"},
					"refundable":     map[string]any{"type": "number"},
					"message":        map[string]any{"type": "string"},
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
// up exactly; PaidTotal and RefundedTotal are filled from the cents for
// output. refundedCents never exceeds paidCents: no customer is refunded
// more than they paid.
type customer struct {
	ID            string  `json:"customer_id"`
	Name          string  `json:"name"`
	Email         string  `json:"email"`
	Plan          string  `json:"plan"`
	PaidTotal     float64 `json:"paid_total"`
	RefundedTotal float64 `json:"refunded_total"`

	paidCents     int64
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
			"CUST-00001": {ID: "CUST-00001", Name: "Ada Lovelace", Email: "ada@example.com", Plan: "pro", paidCents: 125000},
			"CUST-00002": {ID: "CUST-00002", Name: "Alan Turing", Email: "alan@example.com", Plan: "basic", paidCents: 48000},
		},
		keys: map[string]int{"KEY-PRIMARY": 0, "KEY-SECONDARY": 0},
	}
}

func (s *store) get(id string) (customer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.customers[id]
	if !ok {
		return customer{}, false
	}
	out := *c
	out.PaidTotal, out.RefundedTotal = fromCents(c.paidCents), fromCents(c.refundedCents)
	return out, true
}

// refundOutcome is what a refund did.
type refundOutcome int

const (
	notFound  refundOutcome = iota // no such customer
	refused                        // beyond what the customer paid: nothing refunded
	processed                      // refunded
)

// refund refunds cents to customer id, unless it would bring the
// customer's refunds beyond what they paid. It returns the refund's id
// (when processed) and the customer's refunded and still refundable cents
// after it. The check and the refund are one step: concurrent refunds
// never go beyond the paid total together.
func (s *store) refund(id string, cents int64) (out refundOutcome, refundID string, refunded, refundable int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.customers[id]
	if !ok {
		return notFound, "", 0, 0
	}
	if cents > c.paidCents-c.refundedCents {
		return refused, "", c.refundedCents, c.paidCents - c.refundedCents
	}
	s.refunds++
	c.refundedCents += cents
	return processed, fmt.Sprintf("RF-%06d", s.refunds), c.refundedCents, c.paidCents - c.refundedCents
}

// wouldRefund reports what refund(id, cents) would do now, changing
// nothing: the dry run's answer and the spend cost's basis.
func (s *store) wouldRefund(id string, cents int64) (out refundOutcome, refunded, refundable int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.customers[id]
	if !ok {
		return notFound, 0, 0
	}
	if cents > c.paidCents-c.refundedCents {
		return refused, c.refundedCents, c.paidCents - c.refundedCents
	}
	return processed, c.refundedCents, c.paidCents - c.refundedCents
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
// when it will refund nothing (a customer that does not exist, an amount
// beyond what the customer paid). Two refunds that race for the last of a
// paid total are both charged, and one of them is refused: the caps err on
// the safe side. args are validated, numbers are json.Number.
func (s *store) refundCost(args map[string]any) (float64, error) {
	id, _ := args["customer_id"].(string)
	n, ok := args["amount"].(json.Number)
	if !ok {
		return 0, fmt.Errorf("amount is %T, want json.Number", args["amount"])
	}
	amount, err := n.Float64()
	if err != nil {
		return 0, err
	}
	if out, _, _ := s.wouldRefund(id, toCents(amount)); out != processed {
		return 0, nil
	}
	return amount, nil
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
	cents := toCents(in.Amount)
	if dryrun.FromContext(ctx) {
		// A dry run (the guard asked for one): what the refund would do,
		// in the tool's output shape, with nothing refunded.
		switch out, refunded, refundable := s.wouldRefund(in.CustomerID, cents); out {
		case notFound:
			return result(map[string]any{"found": false, "customer_id": in.CustomerID})
		case refused:
			return refusal(in.CustomerID, in.Amount, refunded, refundable)
		}
		return result(map[string]any{
			"found":       true,
			"customer_id": in.CustomerID,
			"refund_id":   dryrun.NewID(),
			"amount":      in.Amount,
			"status":      "dry_run",
		})
	}
	out, refundID, refunded, refundable := s.refund(in.CustomerID, cents)
	switch out {
	case notFound:
		return result(map[string]any{"found": false, "customer_id": in.CustomerID})
	case refused:
		return refusal(in.CustomerID, in.Amount, refunded, refundable)
	}
	return result(map[string]any{
		"found":          true,
		"customer_id":    in.CustomerID,
		"refund_id":      refundID,
		"amount":         in.Amount,
		"status":         "processed",
		"refunded_total": fromCents(refunded),
	})
}

// refusal is the answer to a refund beyond what the customer paid: a tool
// error (the call was valid; the refund was not made), which the model
// reads, and the audit record marks as "tool reported an error".
func refusal(id string, amount float64, refunded, refundable int64) (*mcp.CallToolResult, error) {
	res, err := result(map[string]any{
		"found":          true,
		"customer_id":    id,
		"amount":         amount,
		"status":         "refused",
		"refunded_total": fromCents(refunded),
		"refundable":     fromCents(refundable),
		"message":        "refused: this refund would give the customer back more than they paid; nothing was refunded",
	})
	if res != nil {
		res.IsError = true
	}
	return res, err
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
