package mcpguard_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review42aRetried is how a read went: how often its handler ran, and the
// code and message of its refusal, if any.
type review42aRetried struct {
	Runs          int64
	Code, Message string
}

// review42aTemporary is a handler's error that says it is temporary.
type review42aTemporary struct{}

func (review42aTemporary) Error() string   { return "try later" }
func (review42aTemporary) Temporary() bool { return true }

// RetryReads runs a read's handler a second time only when it failed with
// an error that may pass (ErrUpstreamUnavailable, or one whose Temporary
// says so): not after a result, a tool error result, or another error.
func TestReview42aRetryReadsOnlyTransient(t *testing.T) {
	cases := []struct {
		name string
		res  *mcp.CallToolResult
		err  error
		want review42aRetried
	}{
		{"result", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, review42aRetried{Runs: 1}},
		{"tool_error_result", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil, review42aRetried{Runs: 1}},
		{"plain_error", nil, errors.New("bad input"), review42aRetried{1, "INTERNAL", "the tool failed"}},
		{"upstream_unavailable", nil, fmt.Errorf("db: %w", mcpguard.ErrUpstreamUnavailable), review42aRetried{2, "UPSTREAM_UNAVAILABLE", "the tool's upstream is unavailable"}},
		{"temporary", nil, review42aTemporary{}, review42aRetried{2, "INTERNAL", "the tool failed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			cs := review41aServe(t, &memSink{}, mcpguard.Options{RetryReads: true}, func() (*mcp.CallToolResult, error) {
				runs.Add(1)
				return tc.res, tc.err
			})
			res, err := call(t, cs, "look", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			code, msg := review35Refusal(t, res)
			if diff := cmp.Diff(tc.want, review42aRetried{runs.Load(), code, msg}); diff != "" {
				t.Errorf("look (-want +got):\n%s", diff)
			}
		})
	}
}
