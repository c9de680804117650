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
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview35WrappedHandlerRefusesMissingParams pins that a handler made by Guard.Wrap, called
// in-process without a request or without its parameters, refuses the call as INVALID_ARGUMENTS
// (a tool error, not a panic), does not run the tool, and records the refusal.
func TestReview35WrappedHandlerRefusesMissingParams(t *testing.T) {
	tests := []struct {
		name string
		req  *mcp.CallToolRequest
	}{
		{"nil_request", nil},
		{"nil_params", &mcp.CallToolRequest{}},
	}
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &memSink{}
			g, err := mcpguard.New(pol, fixed(alice), &mcpguard.Options{Audit: sink, Logger: quiet, Confirmer: testSigner(t, nil)})
			if err != nil {
				t.Fatal(err)
			}
			s := &stub{}
			h, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), tt.req)
			checkRan(t, codeOf(t, res, err), string(mcpguard.CodeInvalidArguments), s.ran)
			evs := sink.all()
			if len(evs) != 1 || evs[0].Phase != audit.PhaseOutcome || evs[0].Allowed || evs[0].Code != string(mcpguard.CodeInvalidArguments) {
				t.Errorf("records = %+v, want one refused outcome, INVALID_ARGUMENTS", evs)
			}
		})
	}
}

// TestReview35WaitCountsEveryCall pins that Guard.Wait waits for a call under way however many
// calls the guard has finished before it: each call is counted once in and once out.
func TestReview35WaitCountsEveryCall(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(alice), &mcpguard.Options{Audit: &memSink{}, Logger: quiet, Confirmer: testSigner(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	block := false
	h, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if block {
				entered <- struct{}{}
				<-release
			}
			return textResult("ok"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // calls that finished
		if res, err := h(context.Background(), req("echo", `{}`)); codeOf(t, res, err) != "" {
			t.Fatalf("quick call refused: %q", codeOf(t, res, err))
		}
	}
	block = true
	done := make(chan struct{})
	go func() {
		defer close(done)
		h(context.Background(), req("echo", `{}`))
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with a call under way after 3 finished calls: %v, want the context's deadline", err)
	}
	close(release)
	<-done
	idle, cancelIdle := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelIdle()
	if err := g.Wait(idle); err != nil {
		t.Fatalf("Wait once idle: %v", err)
	}
}

// TestReview35WriteAheadFailureIsLogged pins that a write refused because its write-ahead intent
// could not be recorded is logged at error level for the operator (the audit trail, which would
// say so, is what failed), naming the tool, the refusal's correlation id and the sink's error.
func TestReview35WriteAheadFailureIsLogged(t *testing.T) {
	pol, err := policy.New(basePolicy(false))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	sink := &memSink{}
	sink.fail.Store(true)
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	g, err := mcpguard.New(pol, fixed(alice), &mcpguard.Options{Audit: sink, Logger: logger, Confirmer: testSigner(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	s := &stub{}
	h, err := g.Wrap(&mcp.Tool{Name: "add_note", InputSchema: json.RawMessage(`{"type":"object"}`)}, s.handle)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h(context.Background(), req("add_note", `{"title":"x"}`))
	checkRan(t, codeOf(t, res, err), string(mcpguard.CodeAuditUnavailable), s.ran)
	checkWriteAheadLogged(t, &logs, res, "add_note", "sink down")
}

// checkWriteAheadLogged fails t unless res is a refusal with a correlation
// id and logs holds the error-level JSON line of a write-ahead failure that
// names tool, that id and the sink's error errText.
func checkWriteAheadLogged(t *testing.T, logs *bytes.Buffer, res *mcp.CallToolResult, tool, errText string) {
	t.Helper()
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
			if rec["tool"] != tool || rec["correlation_id"] != de.CorrelationID || rec["err"] != errText {
				t.Errorf("write-ahead failure logged as %v, want tool %s, correlation_id %s, err %q", rec, tool, de.CorrelationID, errText)
			}
		}
	}
	if !found {
		t.Errorf("no error-level log of the write-ahead failure; logs:\n%s", logs.String())
	}
}
