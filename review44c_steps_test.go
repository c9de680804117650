package mcpguard_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReview44cStepsRefuseMissingParams: every stand-alone step, called
// in-process with a caller in the context but without a request or
// without its parameters, refuses the call as INVALID_ARGUMENTS (a tool
// error, not a panic) and does not run the handler.
func TestReview44cStepsRefuseMissingParams(t *testing.T) {
	p := stepPolicy(t)
	m := must(t)
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{Logger: quiet}
	steps := map[string]mcpguard.Middleware{
		"confirm":     m(mcpguard.Confirm(testSigner(t, nil), p, opts)),
		"limit":       m(mcpguard.Limit(lim, p, opts)),
		"dry_run":     m(mcpguard.DryRun(p, opts)),
		"write_ahead": m(mcpguard.WriteAhead(&memSink{}, p, opts)),
	}
	reqs := map[string]*mcp.CallToolRequest{
		"nil_request": nil,
		"nil_params":  {},
	}
	ctx := mcpguard.NewContext(context.Background(), bob)
	for sname, step := range steps {
		for rname, r := range reqs {
			t.Run(sname+"/"+rname, func(t *testing.T) {
				var s stub
				res, err := step(s.handle)(ctx, r)
				if got := codeOf(t, res, err); got != string(mcpguard.CodeInvalidArguments) || s.ran != 0 {
					t.Errorf("step(%s) = %q, handler ran %d times; want INVALID_ARGUMENTS, not run",
						rname, got, s.ran)
				}
			})
		}
	}
}
