package mcpguard_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r62hSetup is one setting in which a Guard (Wrap) and the chain of the
// stand-alone steps, given the same Options, serve the r56 tools.
type r62hSetup struct {
	version string
	// opts sets the Options both are given (the Guard's Audit, Limiter,
	// Confirmer and Logger are set before it).
	opts func(*mcpguard.Options)
	// out is the output schema of every tool (nil: none).
	out json.RawMessage
	// handler is every tool's handler.
	handler func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)
	// exhausted uses up the caller's rate budget first.
	exhausted bool
	// auditDown fails the sink.
	auditDown bool
	// meta is the call's _meta.
	meta mcp.Meta
}

// r62hResult is what a client and the audit trail saw of one call: the
// refusal (without its correlation id), or the result, and every field of
// every record but its time, correlation id and latency.
type r62hResult struct {
	answer  string
	records []string
	ran     int64
}

func r62hRun(t *testing.T, mode string, s r62hSetup, tool string) r62hResult {
	t.Helper()
	sink := &memSink{}
	signer := testSigner(t, nil)
	lim, err := limiter.New([]limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.User, Max: 2, Window: time.Hour},
		{Kind: limiter.Concurrency, Scope: limiter.User, Max: 1},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	authn := mcpguard.AuthenticatorFunc(func(ctx context.Context, req mcp.Request) (*mcpguard.Identity, error) {
		return bob, nil
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := &mcpguard.Options{Audit: sink, Limiter: lim, Confirmer: signer, Logger: log}
	if s.opts != nil {
		s.opts(opts)
	}
	g, err := mcpguard.New(r56Policy(t), authn, opts)
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran.Add(1)
		if s.handler == nil {
			return textResult("ok"), nil
		}
		return s.handler(ctx, req)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "r62h", Version: "1"}, nil)
	for _, name := range []string{"r56_read", "admin_r56", "r56_off", "r56_write", "r56_confirm"} {
		tl := &mcp.Tool{Name: name, InputSchema: r56Schema}
		if s.out != nil {
			tl.OutputSchema = s.out
		}
		if !strings.Contains(name, "write") && !strings.Contains(name, "off") && !strings.Contains(name, "confirm") {
			tl.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		if mode == "chain" {
			srv.AddTool(tl, r62hChain(t, opts, authn, tl, sink, lim)(h))
		} else if err := g.AddTool(srv, tl, h); err != nil {
			t.Fatal(err)
		}
	}
	cs := connectVersion(t, srv, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}, s.version)
	if s.exhausted {
		d := lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 2})
		if !d.Allowed {
			t.Fatalf("pre-exhausting: %+v", d)
		}
		lim.Release(d)
	}
	sink.fail.Store(s.auditDown)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}, Meta: s.meta})
	var out r62hResult
	if d, ok := mcpguard.DenialOf(res, err); ok {
		d.CorrelationID = ""
		b, _ := json.Marshal(d)
		out.answer = "denial " + string(b)
		if err != nil {
			out.answer = "protocol " + out.answer
		} else if res.StructuredContent == nil {
			out.answer += " (text only)"
		}
	} else if err != nil {
		out.answer = "error " + err.Error()
	} else {
		b, _ := json.Marshal(res)
		out.answer = "result " + string(b)
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ev := range sink.all() {
		ev.Time, ev.CorrelationID, ev.LatencyMS = time.Time{}, "", 0
		b, _ := json.Marshal(ev)
		out.records = append(out.records, string(b))
	}
	out.ran = ran.Load()
	// A simulated result's id is drawn at random.
	out.answer = r62hDryRunID.ReplaceAllString(out.answer, "DRYRUN-x")
	return out
}

var r62hDryRunID = regexp.MustCompile(`DRYRUN-[0-9a-f]+`)

// r62hChain is the pipeline of the stand-alone steps, each given opts, in
// the order of the package doc (SchemaSafe outermost when opts asks for
// schema-safe errors, as Options.SchemaSafeErrors' doc says).
func r62hChain(t *testing.T, opts *mcpguard.Options, authn mcpguard.Authenticator, tool *mcp.Tool,
	sink *memSink, lim *limiter.Limiter) mcpguard.Middleware {
	t.Helper()
	p := r56Policy(t)
	auditStep, err := mcpguard.Audit(sink, opts)
	if err != nil {
		t.Fatal(err)
	}
	in, err := mcpguard.NewValidator(tool.InputSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out *mcpguard.Validator
	if tool.OutputSchema != nil {
		if out, err = mcpguard.NewOutputValidator(tool.OutputSchema); err != nil {
			t.Fatal(err)
		}
	}
	limitStep, err := mcpguard.Limit(lim, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeAhead, err := mcpguard.WriteAhead(sink, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	confirmStep, err := mcpguard.Confirm(opts.Confirmer, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	dryRunStep, err := mcpguard.DryRun(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	var safe mcpguard.Middleware
	if opts.SchemaSafeErrors {
		safe = mcpguard.SchemaSafe()
	}
	return mcpguard.Chain(safe, mcpguard.Recover(opts.Logger), auditStep, mcpguard.Authenticate(authn),
		mcpguard.Authorize(p), mcpguard.ValidateArguments(in), confirmStep, limitStep, dryRunStep,
		writeAhead, mcpguard.ValidateOutput(out))
}

// r62hCompare runs tool under s with the Guard and with the chain and
// reports every difference.
func r62hCompare(t *testing.T, s r62hSetup, tool string) {
	t.Helper()
	g := r62hRun(t, "wrap", s, tool)
	c := r62hRun(t, "chain", s, tool)
	if g.answer != c.answer {
		t.Errorf("answers differ:\nguard %s\nchain %s", g.answer, c.answer)
	}
	if strings.Join(g.records, "\n") != strings.Join(c.records, "\n") {
		t.Errorf("records differ:\nguard %s\nchain %s", strings.Join(g.records, "\n      "), strings.Join(c.records, "\n      "))
	}
	if g.ran != c.ran {
		t.Errorf("handler ran %d times under the guard, %d in the chain", g.ran, c.ran)
	}
}
