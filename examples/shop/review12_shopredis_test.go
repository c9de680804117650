package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/internal/testsvc"
)

// TestReview12RedisFlagNeverPrintsAPassword: --redis is host:port (README),
// but a Redis URL or user info is an easy mistake to make, and the shop
// printed the value whole when it could not connect ("--redis
// redis://:hunter2@…: dial tcp: address redis://:hunter2@…: too many
// colons"), password included, to a log that is often collected. Such a
// value is now a usage error (exit 2, before anything dials) whose message
// names the flag without showing the value.
func TestReview12RedisFlagNeverPrintsAPassword(t *testing.T) {
	for _, v := range []string{
		"redis://:hunter2@127.0.0.1:1",
		":hunter2@127.0.0.1:1",
		"user:hunter2@127.0.0.1:1",
		"hunter2@127.0.0.1:1",
		"127.0.0.1:1?password=hunter2",
		"127.0.0.1:1/0",
	} {
		t.Run(strings.NewReplacer(":", "_", "/", "_", "@", "_", "?", "_", "=", "_").Replace(v), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "127.0.0.1:0", "--redis", v)
			cmd.Env = append(os.Environ(), confirmKeyEnv+"="+strings.Repeat("ab", 32))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("--redis %q: %v, want exit status 2 (a usage error)", v, err)
			}
			if strings.Contains(out.String(), "hunter2") || !strings.Contains(out.String(), "--redis") {
				t.Errorf("--redis %q: output %q, want the flag named and no password", v, out.String())
			}
		})
	}
}

// TestReview12RedisSlotsComeBack: with --redis and a cap of one call in
// flight, a call's session check and the guard's limit step take that one
// slot in turn (the check gives its slot back before the guard takes one),
// so calls pass one after the other; and the slot comes back on every way a
// call ends: a read or a write that times out at the gateway (the call's
// deadline, 300 ms here), a refused call. A slot that did not come back
// would refuse every later call for the lease's minute.
func TestReview12RedisSlotsComeBack(t *testing.T) {
	rd := testsvc.StartRedis(t)
	st := newStack(t, onRedis(rd.Addr, func(c *config) { c.inFlight, c.timeout = 1, 300*time.Millisecond }), nil)
	ada := connect(t, st, sessionCustomer, nil)
	for range 3 {
		ok(t, ada, "list_categories", map[string]any{})
	}
	if _, err := ada.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("tools/list with one slot: %v", err)
	}
	for _, c := range []struct {
		tool, method, path string
		args               map[string]any
		retryable          bool
	}{
		{"get_cart", "GET", "/api/cart", map[string]any{}, true},
		{"update_cart", "POST", "/api/cart", map[string]any{"sku": "RB-500", "quantity": 1}, false},
	} {
		h := st.gw.hold(c.method, c.path)
		e := toolErr(t, ada, c.tool, c.args)
		if e["code"] != "UPSTREAM_UNAVAILABLE" || e["retryable"] != c.retryable {
			t.Errorf("%s past its deadline: %v, want UPSTREAM_UNAVAILABLE, retryable %v", c.tool, e, c.retryable)
		}
		close(h.release)
		st.gw.unhold(c.method, c.path)
		ok(t, ada, "list_categories", map[string]any{}) // the slot came back
	}
	// A call the guard refuses after its session check (validation).
	if e := toolErr(t, ada, "update_cart", map[string]any{"sku": "RB-500", "quantity": "1"}); e["code"] != "INVALID_ARGUMENTS" {
		t.Errorf("bad arguments: %v, want INVALID_ARGUMENTS", e)
	}
	ok(t, ada, "list_categories", map[string]any{})
	res := call(t, ada, "get_cart", map[string]any{})
	if res.IsError {
		t.Errorf("get_cart after the held calls: %s", mustJSON(t, res.StructuredContent))
	}
}
