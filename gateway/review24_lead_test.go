package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview24LimiterFailureIsLogged: a limiter whose store fails refuses
// the call (503, retry) or, failing open, lets it through; either way the
// gateway logged nothing of the store's failure, only the refusal's
// contract (RATE_LIMIT_EXCEEDED, as for a caller over the limit), so an
// operator could not tell an outage from load. The guard logs it as an
// error, with the store's error; so does the gateway now.
func TestReview24LimiterFailureIsLogged(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		store := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
			return errors.New("store down: connection refused")
		})
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}},
			&limiter.Options{Store: store, FailOpenReads: failOpen})
		if err != nil {
			t.Fatal(err)
		}
		rg := newRig(t, &Options{Limiter: lim})
		got := rg.post(t, admin, call(`1`, "get_customer_record", `{"id":"c1"}`))
		want := http.StatusServiceUnavailable
		if failOpen {
			want = http.StatusOK
		}
		if got.status != want {
			t.Fatalf("fail open %v: %d %q; want %d", failOpen, got.status, got.body, want)
		}
		logs := rg.logs.String()
		if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "store down: connection refused") ||
			!strings.Contains(logs, "tool=get_customer_record") {
			t.Errorf("fail open %v: logs %q; want an error line naming the tool and the store's error", failOpen, logs)
		}
	}
}

// TestReview24PathWithQueryIsRefused: a Path (or HealthPath) holding "?",
// "#" or "%" is compared with a request's decoded path, so "/mcp?v=1" is
// reached only as "/mcp%3Fv=1", and "/a%20b" only as "/a%2520b": every
// client that sends the path as configured got 404. New refuses them, and
// control characters, which no request's path holds as sent.
func TestReview24PathWithQueryIsRefused(t *testing.T) {
	for _, p := range []string{"/mcp?v=1", "/mcp#x", "/a%20b", "/mcp\n", "/m\x00"} {
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger(), Path: p}); err == nil {
			t.Errorf("Path %q: accepted", p)
		}
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger(), HealthPath: p}); err == nil {
			t.Errorf("HealthPath %q: accepted", p)
		}
	}
	for _, p := range []string{"/mcp/v1", "/my mcp", "/mcp/é", "/"} {
		if _, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger(), Path: p}); err != nil {
			t.Errorf("Path %q: %v", p, err)
		}
	}
}

// TestReview24DeclaredBodyNotReservedUpFront: the gateway reads a POST's
// body before it checks the token (to record the refused calls' tools), and
// it grew its buffer to the declared Content-Length first: a client with no
// token that declared 4 MiB and sent a byte made it hold 4 MiB for as long
// as it stalled. The buffer now grows with what arrives.
func TestReview24DeclaredBodyNotReservedUpFront(t *testing.T) {
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.ContentLength = 4 << 20 // declared; two bytes arrive, then the body ends
	buf, _ := g.readBody(r)
	if buf != nil && buf.Cap() > 1<<20 {
		t.Errorf("a body declared as 4 MiB of which 2 bytes came grew the buffer to %d bytes", buf.Cap())
	}
}

// TestReview24DenyLinesSayWhy: a refusal's log line named its contract
// only: an operator could not tell a missing token from a wrong one, or
// which rule refused a call, without the audit trail. It says why now.
func TestReview24DenyLinesSayWhy(t *testing.T) {
	rg := newRig(t, nil)
	rg.post(t, "", call(`1`, "get_customer_record", `{}`))
	rg.post(t, "Bearer nope", call(`2`, "get_customer_record", `{}`))
	rg.post(t, viewer, call(`3`, "admin_reset_key", `{}`))
	logs := rg.logs.String()
	for _, want := range []string{"missing bearer token", "invalid bearer token", "admin_reset_key"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs %q; want %q", logs, want)
		}
	}
	if strings.Count(logs, "reason=") < 3 {
		t.Errorf("logs %q; want a reason on each deny line", logs)
	}
}
