package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review62dRun runs c as runR56Mode does and returns the refusal the client
// got (without its correlation id) and every field of every record but
// its time, correlation id and latency.
func review62dRun(t *testing.T, mode string, c r56Case) (answer string, records []string) {
	t.Helper()
	e := newR56EnvMode(t, mode, c.opts)
	e.authOK.Store(!c.authFail)
	e.mode.Store(c.handler)
	if c.exhausted {
		d := e.lim.AllowAt(context.Background(), time.Now(), limiter.Request{User: "bob", Calls: 2})
		e.lim.Release(d)
	}
	args := map[string]any{"text": "x"}
	if c.badArgs {
		args = map[string]any{"text": 5, "extra": 1}
	}
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: args})
	if d, ok := mcpguard.DenialOf(res, err); ok {
		d.CorrelationID = ""
		b, _ := json.Marshal(d)
		answer = string(b)
	} else if err != nil {
		answer = err.Error()
	}
	if err := e.g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ev := range e.sink.all() {
		ev.Time, ev.CorrelationID, ev.LatencyMS = time.Time{}, "", 0
		b, _ := json.Marshal(ev)
		records = append(records, string(b))
	}
	return answer, records
}

// TestReview62dChainRecordDetail: the Audit middleware's doc says the
// stand-alone steps tell it what they learn "so that its record is the
// one a Guard would write" (steps.go: "given the same opts, its records
// are the Guard's"). Every field matches but detail: the Guard's record of
// a refusal by the policy or a limit says why (the refusal's message:
// "rate limit per user reached (2 calls per 1h)", "caller lacks a
// required role"), and of a handler's failure "handler error" or "refused
// by the tool"; the chain's record has no detail at all, so an operator
// reading the trail of a chain cannot tell which limit refused a call.
func TestReview62dChainRecordDetail(t *testing.T) {
	for _, c := range []r56Case{
		{tool: "admin_r56", handler: "ok"},
		{tool: "r56_off", handler: "ok"},
		{tool: "r56_write", exhausted: true, handler: "ok"},
		{tool: "r56_read", exhausted: true, handler: "ok"},
		{tool: "r56_write", handler: "error"},
		{tool: "r56_read", handler: "denial"},
	} {
		t.Run(fmt.Sprintf("%s/exhausted=%v/%s", c.tool, c.exhausted, c.handler), func(t *testing.T) {
			_, g := review62dRun(t, "wrap", c)
			_, ch := review62dRun(t, "chain", c)
			if fmt.Sprint(g) != fmt.Sprint(ch) {
				t.Errorf("records differ:\nguard %v\nchain %v", g, ch)
			}
		})
	}
}

// TestReview62dChainAnswer: the same call gets the same refusal from the
// Guard and from the chain of stand-alone steps in DESIGN.md's order. It
// does not: a write off the allowlist is refused by the chain's Authorize
// with the policy's reason ("write tool is not on the write allowlist"),
// which does not name the tool an operator must add, where the Guard says
// `tool "r56_off" is a write tool and is not on the write allowlist`; and a
// write whose handler failed (error, panic, (nil, nil)) is refused by the
// chain's Recover with "the tool failed", without the Guard's "the write
// may have been made: check before repeating it".
func TestReview62dChainAnswer(t *testing.T) {
	for _, c := range []r56Case{
		{tool: "r56_off", handler: "ok"},
		{tool: "r56_write", handler: "error"},
		{tool: "r56_write", handler: "panic"},
		{tool: "r56_write", handler: "nil"},
	} {
		t.Run(c.tool+"/"+c.handler, func(t *testing.T) {
			g, _ := review62dRun(t, "wrap", c)
			ch, _ := review62dRun(t, "chain", c)
			if g != ch {
				t.Errorf("answers differ:\nguard %s\nchain %s", g, ch)
			}
		})
	}
}
