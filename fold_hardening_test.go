package mcpguard_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seatsHandler decodes its arguments as a raw go-sdk handler usually does
// (and as examples/refund/tools.go does): encoding/json into a struct. It
// records the seats it would book.
func seatsHandler(got *atomic.Int64) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Seats int64 `json:"seats"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		got.Store(in.Seats)
		return textResult("booked"), nil
	}
}

// TestArgLimitCaseVariantKey checks that an argument limit ("seats" at
// most 10) cannot be passed with a second key equal to the field but for
// letter case: encoding/json, the usual decoder of a raw handler, matches
// keys to struct fields regardless of case (with Unicode folding: U+017F,
// the long s, folds to "s") and keeps the last, so {"seats":1,"Seats":500}
// would book 500 seats. The tool's schema declares no fields, so strict mode
// leaves it open. Through Install on both protocol versions, and through
// the stand-alone Authorize.
func TestArgLimitCaseVariantKey(t *testing.T) {
	limit := []policy.ArgLimit{{Field: "seats", Max: 10}}
	cfg := policy.Config{Tools: []policy.ToolRule{{Name: "book_seats", Class: policy.Read, ArgLimits: limit}}}
	attacks := []string{
		`{"seats":1,"Seats":500}`,
		`{"seats":1,"SEATS":500}`,
		`{"seats":1,"\u017feats":500}`,
	}

	t.Run("install", func(t *testing.T) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "seats", Version: "1"}, nil)
		var got atomic.Int64
		srv.AddTool(&mcp.Tool{Name: "book_seats", InputSchema: json.RawMessage(`{"type":"object"}`)}, seatsHandler(&got))
		guardWithPolicy(t, srv, cfg)
		for _, v := range protocolVersions {
			cs := connectVersion(t, srv, nil, v)
			// The limit works for the plain field.
			if res, err := call(t, cs, "book_seats", json.RawMessage(`{"seats":500}`)); err != nil || errorCode(t, res) != string(mcpguard.CodeForbidden) {
				t.Fatalf("%s: seats=500: %v %s, want FORBIDDEN", versionName(v), err, mustJSON(res))
			}
			for _, args := range attacks {
				got.Store(0)
				res, err := call(t, cs, "book_seats", json.RawMessage(args))
				if err == nil && !res.IsError && got.Load() > 10 {
					t.Errorf("%s: arguments %s passed the limit of 10 seats; the handler booked %d", versionName(v), args, got.Load())
				}
			}
		}
	})

	t.Run("authorize_middleware", func(t *testing.T) {
		pol, err := policy.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got atomic.Int64
		h := mcpguard.Chain(mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol))(seatsHandler(&got))
		for _, args := range attacks {
			got.Store(0)
			res, err := h(context.Background(), req("book_seats", args))
			if err == nil && !res.IsError && got.Load() > 10 {
				t.Errorf("Authorize: arguments %s passed the limit of 10 seats; the handler booked %d", args, got.Load())
			}
		}
	})
}

// TestSchemaBoundCaseVariantKey checks the same against the schema itself,
// in the default strict mode: the schema bounds "seats" to at most 10 and
// says what other fields may be (integers), which strict mode keeps, so
// "Seats" would be an accepted other field whose 500 encoding/json hands
// the handler. Two keys equal but for letter case are refused as a
// duplicate.
func TestSchemaBoundCaseVariantKey(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "seats", Version: "1"}, nil)
	var got atomic.Int64
	srv.AddTool(&mcp.Tool{Name: "book_seats", InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {"seats": {"type": "integer", "minimum": 1, "maximum": 10}},
		"additionalProperties": {"type": "integer"},
		"required": ["seats"]
	}`)}, seatsHandler(&got))
	guardWithPolicy(t, srv, policy.Config{Tools: []policy.ToolRule{{Name: "book_seats", Class: policy.Read}}})
	for _, v := range protocolVersions {
		cs := connectVersion(t, srv, nil, v)
		if res, err := call(t, cs, "book_seats", json.RawMessage(`{"seats":500}`)); err != nil || errorCode(t, res) != string(mcpguard.CodeInvalidArguments) {
			t.Fatalf("%s: seats=500: %v %s, want INVALID_ARGUMENTS", versionName(v), err, mustJSON(res))
		}
		for _, args := range []string{`{"seats":1,"Seats":500}`, `{"seats":1,"\u017feats":500}`} {
			got.Store(0)
			res, err := call(t, cs, "book_seats", json.RawMessage(args))
			if err == nil && !res.IsError && got.Load() > 10 {
				t.Errorf("%s: arguments %s passed the schema's maximum of 10; the handler booked %d", versionName(v), args, got.Load())
			}
		}
	}
}

// TestGoexitNotAuditedAsAllowed checks that a handler that ends its
// goroutine with runtime.Goexit (t.FailNow, or a helper that calls it), and
// so returns no result, is not recorded as an allowed, successful call: the
// guard's deferred audit runs with recover() == nil and must still see that
// the handler never returned.
func TestGoexitNotAuditedAsAllowed(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "quit", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Logger: quiet, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "quit", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runtime.Goexit()
			return textResult("unreachable"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	returned := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		h(context.Background(), req("quit", `{}`))
		returned = true
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("guarded call neither returned nor exited")
	}
	if returned {
		t.Fatal("Goexit did not end the call")
	}
	evs := sink.all()
	if len(evs) != 1 {
		t.Fatalf("%d audit events, want 1", len(evs))
	}
	if ev := evs[0]; ev.Allowed && ev.Code == "" {
		t.Errorf("a call whose handler never returned (runtime.Goexit) is audited as allowed with no code and detail %q: %s", ev.Detail, mustJSON(ev))
	}
}
