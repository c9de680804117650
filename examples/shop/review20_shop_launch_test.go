package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestReview20MalformedLaunchSessionWarned: over stdio the session comes
// from SHOP_MCP_SESSION, set by hand in a client's configuration. A value
// that can never be a session (the cookie pasted with its name,
// "rs_auth=…", a "Bearer " prefix, a space or a line break around it)
// started the server without a word, and then every call was refused as
// "malformed session", which does not say where to look. An unset
// variable is warned about at start; so is now a malformed one, without
// printing the value, which is a credential.
func TestReview20MalformedLaunchSessionWarned(t *testing.T) {
	const secret = "sess-customer-ada"
	for _, tc := range []struct {
		name, value string
		warn        bool
	}{
		{"cookie_with_name", "rs_auth=" + secret, true},
		{"bearer_prefix", "Bearer " + secret, true},
		{"leading_space", " " + secret, true},
		{"trailing_newline", secret + "\n", true},
		{"plain", secret, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "--gateway", "http://127.0.0.1:1")
			for _, e := range os.Environ() {
				if !strings.HasPrefix(e, "SHOP_") && !strings.HasPrefix(e, "MCP_") {
					cmd.Env = append(cmd.Env, e)
				}
			}
			cmd.Env = append(cmd.Env, sessionEnv+"="+tc.value)
			cmd.Stdin = strings.NewReader("") // end of input: the server stops
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				code = -1
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				}
			}
			out := stderr.String()
			if code != 0 {
				t.Fatalf("exit %d at end of input, want 0; output:\n%s", code, out)
			}
			warned := strings.Contains(out, "SHOP_MCP_SESSION is not a session")
			if warned != tc.warn {
				t.Errorf("SHOP_MCP_SESSION=%q: warned %t, want %t; output:\n%s", tc.value, warned, tc.warn, out)
			}
			if strings.Contains(out, secret) {
				t.Errorf("SHOP_MCP_SESSION=%q: the output shows the session:\n%s", tc.value, out)
			}
		})
	}
}

// TestReview20MalformedLaunchSessionRefusalSaysWhere: each call of a stdio
// server whose SHOP_MCP_SESSION cannot be a session was refused as
// "malformed session", which names neither the variable nor what it
// should hold; the refusal now does both, still without the value, and
// nothing reaches the gateway.
func TestReview20MalformedLaunchSessionRefusalSaysWhere(t *testing.T) {
	st := newStack(t, func(c *config) { c.stdio, c.launch = true, "rs_auth="+sessionCustomer }, nil)
	cs := connectInMemory(t, st.shop, nil)
	e := toolErr(t, cs, "get_cart", map[string]any{})
	msg, _ := e["message"].(string)
	if e["code"] != "UNAUTHENTICATED" || !strings.Contains(msg, sessionEnv) || !strings.Contains(msg, "rs_auth") {
		t.Errorf("get_cart with SHOP_MCP_SESSION=rs_auth=…: %v, want UNAUTHENTICATED naming %s and what it holds", e, sessionEnv)
	}
	if strings.Contains(msg, sessionCustomer) {
		t.Errorf("the refusal shows the session: %q", msg)
	}
	if n := len(st.gw.recorded()); n != 0 {
		t.Errorf("%d gateway requests, want none", n)
	}
}
