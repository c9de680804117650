package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/dryrun"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Review 28b: a second look at the guard's ending a question to the client
// (elicitation, sampling, roots) sent within a write when its caller
// cancels the call (serve.go's detachedCtx, askClient).

// r28bServer is a go-sdk server with the guard installed, the tool "job"
// of class class running h, and one in-memory client session (bound to
// alice) on 2025-11-25 (2026-07-28 has no questions to the client but
// in a call's InputRequests) that answers roots/list. opts may be nil.
func r28bServer(t *testing.T, class policy.Class, opts *mcpguard.Options, h mcp.ToolHandler) (*mcpguard.Guard, *memSink, *mcp.ServerSession, *mcp.ClientSession) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "job", Class: class}}, WriteAllowlist: []string{"job"}})
	if err != nil {
		t.Fatal(err)
	}
	var o mcpguard.Options
	if opts != nil {
		o = *opts
	}
	sink := &memSink{}
	o.Audit = sink
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	auth := &sessionAuth{ids: map[*mcp.ServerSession]*mcpguard.Identity{}}
	g, err := mcpguard.New(pol, auth, &o)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth.mu.Lock()
	auth.ids[ss] = alice
	auth.mu.Unlock()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	//lint:ignore SA1019 a question to the client on a version that has it, deprecated or not
	c.AddRoots(&mcp.Root{URI: "file:///r"})
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return g, sink, ss, cs
}

// TestReview28bAskAfterAnswer: a write's handler is given a context its
// caller's end does not cancel, so that a started write runs to
// completion; work it goes on with after it answered (a job it started)
// may still ask the client a question on that context. The go-sdk cancels
// a request's context once it is answered: that is no cancellation by the
// client, and the question must not be ended for it.
func TestReview28bAskAfterAnswer(t *testing.T) {
	answered := make(chan struct{})
	got := make(chan error, 1)
	_, _, _, cs := r28bServer(t, policy.Write, nil, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		go func() {
			<-answered
			qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			//lint:ignore SA1019 a question to the client on a version that has it, deprecated or not
			_, err := req.Session.ListRoots(qctx, nil)
			got <- err
		}()
		return textResult("started"), nil
	})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "job", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	close(answered)
	if err := <-got; err != nil {
		t.Fatalf("roots/list asked by the write's job after its answer, on the write's context: %v; want the client's answer", err)
	}
}

// TestReview28bAskAfterCancel: a write's handler that asks the client
// itself once its caller has cancelled the call gets an error at once (it
// does not wait for an answer), the write is not cancelled, and the call
// ends with a record of the client's going away; Guard.Wait returns.
// Likewise under a per-call timeout.
func TestReview28bAskAfterCancel(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Minute} {
		t.Run(time.Duration(timeout).String(), func(t *testing.T) {
			started := make(chan struct{})
			cancelled := make(chan struct{})
			type seen struct {
				err    error
				ctxErr error
				took   time.Duration
			}
			out := make(chan seen, 1)
			g, sink, _, cs := r28bServer(t, policy.Write, &mcpguard.Options{Timeout: timeout}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				close(started)
				<-cancelled
				time.Sleep(200 * time.Millisecond) // the cancellation reaches the server
				t0 := time.Now()
				//lint:ignore SA1019 a question to the client on a version that has it, deprecated or not
				_, err := req.Session.ListRoots(ctx, nil)
				out <- seen{err, ctx.Err(), time.Since(t0)}
				return nil, err
			})
			cctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "job", Arguments: map[string]any{}})
				done <- err
			}()
			<-started
			cancel()
			<-done
			close(cancelled)
			s := <-out
			if !errors.Is(s.err, context.Canceled) || s.ctxErr != nil || s.took > time.Second {
				t.Errorf("the handler's question after its caller cancelled: err %v, its ctx %v, took %v; want context.Canceled at once, its ctx live", s.err, s.ctxErr, s.took)
			}
			wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer wcancel()
			if err := g.Wait(wctx); err != nil {
				t.Fatal(err)
			}
			evs := sink.all()
			last := evs[len(evs)-1]
			if last.Phase != audit.PhaseOutcome || last.Allowed || last.Code != string(mcpguard.CodeInternal) || !strings.Contains(last.Detail, "client went away") {
				t.Errorf("last record %+v: want a refused INTERNAL outcome, for the client's going away", last)
			}
		})
	}
}

// TestReview28bAskOutsideCall: a question to the client outside any
// guarded call (a server-initiated roots/list, a ping), and from a read's
// handler, is as the go-sdk makes it.
func TestReview28bAskOutsideCall(t *testing.T) {
	got := make(chan error, 1)
	_, _, ss, cs := r28bServer(t, policy.Read, nil, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 a question to the client on a version that has it, deprecated or not
		_, err := req.Session.ListRoots(ctx, nil)
		got <- err
		return textResult("ok"), nil
	})
	//lint:ignore SA1019 a question to the client on a version that has it, deprecated or not
	if _, err := ss.ListRoots(context.Background(), nil); err != nil {
		t.Errorf("roots/list outside a call: %v", err)
	}
	if err := ss.Ping(context.Background(), nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "job", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("roots/list from a read's handler: %v", err)
	}
}

type r28bKey struct{}

// TestReview28bWriteValues: a write's handler still sees, through the
// context the guard gives it, its caller's identity, the call's
// correlation id, the dry-run marker and the values of the caller's own
// context; and that context is not cancelled with the caller's.
func TestReview28bWriteValues(t *testing.T) {
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "job", Class: policy.Write}}, WriteAllowlist: []string{"job"}})
	if err != nil {
		t.Fatal(err)
	}
	auth := mcpguard.AuthenticatorFunc(func(context.Context, mcp.Request) (*mcpguard.Identity, error) { return alice, nil })
	g, err := mcpguard.New(pol, auth, &mcpguard.Options{Audit: &memSink{}, Timeout: time.Minute,
		Tools:  map[string]mcpguard.ToolOptions{"job": {DryRunAware: true}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{false, true} {
		var who, corr, val string
		var sawDry bool
		var ctxErr error
		cctx, cancel := context.WithCancel(context.WithValue(context.Background(), r28bKey{}, "mine"))
		h, err := g.Wrap(&mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cancel()
			if id := mcpguard.FromContext(ctx); id != nil {
				who = id.Principal.Subject
			}
			corr = mcpguard.CorrelationID(ctx)
			val, _ = ctx.Value(r28bKey{}).(string)
			sawDry = dryrun.FromContext(ctx)
			ctxErr = ctx.Err()
			return textResult("ok"), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := cctx
		if dry {
			ctx = dryrun.NewContext(ctx)
		}
		if _, err := h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "job", Arguments: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		if who != "alice" || corr == "" || val != "mine" || sawDry != dry || ctxErr != nil {
			t.Errorf("dry %v: handler saw subject %q, correlation id %q, caller's value %q, dry run %v, ctx err %v", dry, who, corr, val, sawDry, ctxErr)
		}
	}
}
