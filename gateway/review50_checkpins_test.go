package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview50CheckPinsFailsWithNoCount: every way CheckPins fails returns
// 0 tools with its error, the listing's own failures as well as the
// refusals before it.
func TestReview50CheckPinsFailsWithNoCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caller := &policy.Principal{Subject: "pin-check"}
	tool := `{"name":"a","inputSchema":{"type":"object"}}`
	noPins, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	withPins := func(page func(string) string) *Gateway {
		var lists atomic.Int64
		g, err := New(pagedServer(t, &lists, page).URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ok := withPins(func(string) string { return `{"tools":[` + tool + `]}` })
	for _, tc := range []struct {
		name   string
		g      *Gateway
		caller *policy.Principal
		want   string
	}{
		{"no_pins", noPins, caller, "no Pins"},
		{"nil_caller", ok, nil, "no subject"},
		{"no_subject", ok, &policy.Principal{Roles: []string{"admin"}}, "no subject"},
		{"bad_caller", ok, &policy.Principal{Subject: "a", Roles: []string{"x,y"}}, "CheckPins"},
		{"bad_listing", withPins(func(string) string { return `"no tools"` }), caller, "listing the downstream's tools"},
		{"second_page_fails", withPins(func(c string) string {
			if c == "" {
				return `{"tools":[` + tool + `],"nextCursor":"2"}`
			}
			return `7`
		}), caller, "listing the downstream's tools"},
		{"same_cursor", withPins(func(string) string { return `{"tools":[` + tool + `],"nextCursor":"again"}` }), caller, "cursor again"},
		{"endless", withPins(func(c string) string { return `{"tools":[` + tool + `],"nextCursor":"` + c + `n"}` }), caller, "past 1000 pages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.g.CheckPins(ctx, tc.caller)
			if err == nil || n != 0 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckPins = %d, %v; want 0 and an error containing %q", n, err, tc.want)
			}
		})
	}
	if n, err := ok.CheckPins(ctx, caller); err != nil || n != 1 {
		t.Errorf("the good downstream: %d, %v; want 1 tool", n, err)
	}
}

// TestReview50CheckPinsPageBound: a listing of exactly maxCheckPages pages
// is listed whole; one that hands out a cursor on its last page fails with
// maxCheckPages pages asked for, not one more.
func TestReview50CheckPinsPageBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name  string
		pages int
		want  int // tools, or -1 for an error
	}{
		{"at_bound", maxCheckPages, maxCheckPages},
		{"past_bound", maxCheckPages + 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lists atomic.Int64
			down := pagedServer(t, &lists, func(c string) string {
				i, _ := strconv.Atoi(c) // the first page's cursor is "": 0
				next := ""
				if i+1 < tc.pages {
					next = `,"nextCursor":"` + strconv.Itoa(i+1) + `"`
				}
				return `{"tools":[{"name":"t` + strconv.Itoa(i) + `","inputSchema":{"type":"object"}}]` + next + `}`
			})
			g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			n, err := g.CheckPins(ctx, &policy.Principal{Subject: "pin-check"})
			switch {
			case tc.want >= 0 && (err != nil || n != tc.want):
				t.Errorf("CheckPins = %d, %v; want %d tools", n, err, tc.want)
			case tc.want < 0 && (err == nil || n != 0):
				t.Errorf("CheckPins = %d, %v; want 0 and an error", n, err)
			}
			if k := lists.Load(); k != maxCheckPages {
				t.Errorf("%d pages asked for, want %d", k, maxCheckPages)
			}
		})
	}
}

// TestReview50InProcessIdentity: a request served in process for CheckPins
// runs as its caller even when it carries a token of its own (the
// Authorization header is dropped).
func TestReview50InProcessIdentity(t *testing.T) {
	d := &downstream{}
	g, err := New(newServer(t, d).URL+"/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://mcpguard-gateway.invalid/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer admin-token")
	resp, err := inProcess{g: g, caller: &policy.Principal{Subject: "pin-check", Roles: []string{"viewer"}}}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("in process: %d %s, %v", resp.StatusCode, b, err)
	}
	got := d.log()
	if len(got) != 1 {
		t.Fatalf("the downstream received %d requests, want 1", len(got))
	}
	if sub, role := got[0].Header.Get(HeaderSubject), got[0].Header.Get(HeaderRole); sub != "pin-check" || role != "viewer" {
		t.Errorf("sent downstream as %q (%q), want the caller pin-check (viewer), not the token's admin", sub, role)
	}
}

// panicHandler is a slog.Handler whose Handle panics: a gateway logging
// through it panics while it serves.
type panicHandler struct{}

func (panicHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panicHandler) Handle(context.Context, slog.Record) error { panic("logger broke") }
func (h panicHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h panicHandler) WithGroup(string) slog.Handler           { return h }

// TestReview50InProcessPanic: a panic while the gateway serves a request in
// process (here its logger's) comes back as the round trip's error, or its
// body's, saying so: CheckPins fails at once rather than waiting for its
// context.
func TestReview50InProcessPanic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var lists atomic.Int64
	down := pagedServer(t, &lists, func(string) string { return `{"tools":[]}` })
	g, err := New(down.URL, DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: slog.New(panicHandler{})})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://mcpguard-gateway.invalid/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := inProcess{g: g, caller: &policy.Principal{Subject: "pin-check"}}.RoundTrip(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "panic serving in process: logger broke") || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("in process: %v; want the panic as the error", err)
	}
	start := time.Now()
	if n, err := g.CheckPins(ctx, &policy.Principal{Subject: "pin-check"}); err == nil || n != 0 || !strings.Contains(err.Error(), "panic serving in process") {
		t.Errorf("CheckPins = %d, %v; want the panic as its error", n, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("CheckPins took %v", d)
	}
}
