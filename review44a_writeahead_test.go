package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview44aWriteAheadFailureIsLogged: the stand-alone WriteAhead, like
// the Guard's step 10, logs at error level the write it refused because its
// intent could not be recorded, with the tool, the correlation id its
// refusal carries and the sink's error, and its outcome record says why.
func TestReview44aWriteAheadFailureIsLogged(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Write}}, WriteAllowlist: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	opts := &mcpguard.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	sink := &intentFailSink{}
	sink.down.Store(true)
	ahead, err := mcpguard.WriteAhead(sink, pol, opts)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := mcpguard.Chain(mustAudit(t, sink, opts), mcpguard.Authenticate(fixed(bob)), mcpguard.Authorize(pol), ahead)(
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paid"}}}, nil
		})
	res, err := h(context.Background(), req("pay", `{}`))
	if code := codeOf(t, res, err); code != string(mcpguard.CodeAuditUnavailable) || ran != 0 {
		t.Fatalf("pay with the trail down: %q, handler ran %d times; want AUDIT_UNAVAILABLE, not run", code, ran)
	}
	var de *mcpguard.DenialError
	if !errors.As(res.GetError(), &de) || de.CorrelationID == "" {
		t.Fatalf("refusal %v carries no correlation id", res.GetError())
	}
	var found bool
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["level"] == "ERROR" && strings.Contains(fmt.Sprint(rec["msg"]), "write-ahead") {
			found = true
			if rec["tool"] != "pay" || rec["correlation_id"] != de.CorrelationID || rec["err"] != "disk full" {
				t.Errorf("write-ahead failure logged as %v, want tool pay, correlation_id %s, err \"disk full\"", rec, de.CorrelationID)
			}
		}
	}
	if !found {
		t.Errorf("no error-level log of the write-ahead failure; logs:\n%s", logs.String())
	}
	evs := sink.all()
	if len(evs) != 1 || evs[0].Phase != audit.PhaseOutcome || evs[0].Code != string(mcpguard.CodeAuditUnavailable) ||
		evs[0].Detail != "write-ahead intent not recorded" {
		t.Errorf("records %+v; want one AUDIT_UNAVAILABLE outcome whose detail says the intent was not recorded", evs)
	}
}
