package mcpguard_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goexitJSON ends its goroutine with runtime.Goexit when it is encoded, as
// a MarshalJSON that calls t.FailNow does.
type goexitJSON struct{}

func (goexitJSON) MarshalJSON() ([]byte, error) {
	runtime.Goexit()
	return nil, nil
}

// d134a0c marks a panic while the guard checks a handler's result (step
// 11) as after the handler ran, but not a runtime.Goexit there: the call's
// goroutine ended, nothing was answered, and the record said the call was
// allowed, without the "may have been made" of a write. A Goexit in the
// handler itself was already recorded as a failure.
func TestReview17hGoexitOnTheResultIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		class policy.Class
		want  string // in the record's detail
	}{
		{"write", policy.Write, "Goexit"},
		{"read", policy.Read, "Goexit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.New(policy.Config{
				Tools:          []policy.ToolRule{{Name: "tool", Class: tc.class}},
				WriteAllowlist: []string{"tool"},
			})
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			tool := &mcp.Tool{Name: "tool", InputSchema: json.RawMessage(`{"type":"object"}`)}
			if tc.class == policy.Read {
				tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
			}
			h, err := g.Wrap(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				res := textResult("done")
				res.Meta = mcp.Meta{"x": goexitJSON{}}
				return res, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "tool", Arguments: json.RawMessage(`{}`)}})
			}()
			<-done
			evs := sink.all()
			if len(evs) == 0 {
				t.Fatal("no records")
			}
			out := evs[len(evs)-1]
			if out.Phase != audit.PhaseOutcome || out.Allowed || out.Code != string(mcpguard.CodeInternal) || !strings.Contains(out.Detail, tc.want) {
				t.Errorf("outcome record %+v; want a refusal INTERNAL whose detail says the call's goroutine exited (runtime.Goexit)", out)
			}
		})
	}
}
