package limitertest

import (
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// spellLimits are a tool's limits of every kind, and one for all tools.
func spellLimits() []limiter.Limit {
	return []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Tool: "search", Max: 2, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Tool: "search", Max: 10, Window: time.Minute},
		{Kind: limiter.Concurrency, Scope: limiter.Global, Tool: "search", Max: 1},
		{Kind: limiter.Rate, Scope: limiter.Global, Max: 100, Window: time.Minute},
	}
}

// testToolSpellings checks that a limit for one tool charges the calls of
// every spelling of its name (limiter.Limit.Tool: "SEARCH", "ſearch" for
// "search") from one budget, and that a slot held under one spelling is
// freed by the release of its decision and taken by another spelling.
func testToolSpellings(t *testing.T, s limiter.Store) {
	l := newLimiter(t, s, spellLimits()...)
	req := func(tool, sess string, cost float64) limiter.Request {
		return limiter.Request{Session: sess, User: "sp-u", Tool: tool, Calls: 1, Cost: cost}
	}
	busy := denied(limiter.Concurrency, limiter.Global, 0)
	held := allowAt(t, l, 0, req("SEARCH", "sp-a", 4), allowed)
	allowAt(t, l, 0, req("search", "sp-b", 1), busy)
	allowAt(t, l, 0, req("\u017fearch", "sp-b", 1), busy)
	allowAt(t, l, 0, req("other", "sp-b", 100), allowed) // not the tool's
	l.Release(held)
	held = allowAt(t, l, 0, req("Search", "sp-a", 4), allowed)
	l.Release(held)
	// Session sp-a made its two calls of the tool, under two spellings.
	allowAt(t, l, 0, req("search", "sp-a", 0), denied(limiter.Rate, limiter.Session, 30*time.Second))
	// User sp-u spent 8 of 10 on it, under two spellings.
	allowAt(t, l, 0, req("SEARCH\u200b", "sp-c", 3), denied(limiter.Spend, limiter.User, 6*time.Second))
	l.Release(allowAt(t, l, 0, req("search", "sp-c", 2), allowed))
}

// testRefundToolSpellings checks that the refund of a call of another
// spelling of a tool's name gives back to the tool's limits what the call
// took from them, as for a call of the name itself, and that Kept counts
// the tool's Spend limit for it.
func testRefundToolSpellings(t *testing.T, s limiter.Store) {
	needRefunds(t, s)
	l := newLimiter(t, s, spellLimits()...)
	req := func(tool string, cost float64) limiter.Request {
		return limiter.Request{Session: "rsp-a", User: "rsp-u", Tool: tool, Calls: 1, Cost: cost}
	}
	d := allowAt(t, l, 0, req("SEARCH", 10), allowed)
	if k := l.Kept(t0.Add(30*time.Second), d); k != 0.5 {
		t.Errorf("Kept of a call of SEARCH costing search's whole spend, half its time later = %v, want 0.5", k)
	}
	refundAt(t, l, 0, d)
	l.Release(d)
	// The call and its cost are back: two more calls, one of all 10.
	l.Release(allowAt(t, l, 0, req("search", 10), allowed))
	l.Release(allowAt(t, l, 0, req("\u017fearch", 0), allowed))
	allowAt(t, l, 0, req("search", 0), denied(limiter.Rate, limiter.Session, 30*time.Second))
}

// testDryRunToolSpellings checks that a dry run of another spelling of a
// tool's name is checked against the tool's Spend limits and takes none
// of them.
func testDryRunToolSpellings(t *testing.T, s limiter.Store) {
	needPeeks(t, s)
	l := newLimiter(t, s, spellLimits()...)
	req := func(tool, sess string, cost float64, dry bool) limiter.Request {
		return limiter.Request{Session: sess, User: "dsp-u", Tool: tool, Calls: 1, Cost: cost, DryRun: dry}
	}
	l.Release(allowAt(t, l, 0, req("search", "dsp-a", 7, false), allowed))
	allowAt(t, l, 0, req("SEARCH", "dsp-b", 5, true), denied(limiter.Spend, limiter.User, 12*time.Second))
	l.Release(allowAt(t, l, 0, req("SEARCH", "dsp-c", 3, true), allowed))
	l.Release(allowAt(t, l, 0, req("\u017fearch", "dsp-d", 3, false), allowed))
	allowAt(t, l, 0, req("search", "dsp-e", 0.001, true), denied(limiter.Spend, limiter.User, 6*time.Millisecond))
}
