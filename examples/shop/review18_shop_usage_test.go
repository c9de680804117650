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
)

// TestReview18UsageErrorsSayWhy: a command line that cannot work exits 2
// with a line that says what is wrong. Before, a --transport or
// MCP_TRANSPORT that is neither stdio nor http, a missing --gateway and
// stray arguments all got the same synopsis line, naming neither the
// value nor the variable at fault; `shop fake-gateway extra` exited 2 in
// silence, `shop fake-gateway --port 99999` exited 1 (a flag value that
// cannot work is a usage error), and `shop demo extra` ignored the
// argument and ran the demo. --addr 127.0.0.1:99999 exited 1 when the
// listen failed.
func TestReview18UsageErrorsSayWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"transport_flag", nil, []string{"--gateway", "http://127.0.0.1:1", "--transport", "carrier-pigeon"},
			[]string{"--transport", `"carrier-pigeon"`, "stdio or http"}},
		{"transport_env", []string{"MCP_TRANSPORT=streamable-http"}, []string{"--gateway", "http://127.0.0.1:1"},
			[]string{"MCP_TRANSPORT", `"streamable-http"`, "stdio or http"}},
		{"no_gateway", nil, []string{"--transport", "http"},
			[]string{"--gateway", "SHOP_GATEWAY_URL"}},
		{"stray_argument", nil, []string{"--gateway", "http://127.0.0.1:1", "serve"},
			[]string{"unexpected", `"serve"`}},
		{"fake_gateway_stray_argument", nil, []string{"fake-gateway", "4110"},
			[]string{"unexpected", `"4110"`}},
		{"fake_gateway_port_out_of_range", nil, []string{"fake-gateway", "--port", "99999"},
			[]string{"--port", "99999", "0 to 65535"}},
		{"fake_gateway_port_negative", nil, []string{"fake-gateway", "--port", "-1"},
			[]string{"--port", "-1", "0 to 65535"}},
		{"addr_port_out_of_range", nil, []string{"--gateway", "http://127.0.0.1:1", "--transport", "http", "--addr", "127.0.0.1:99999"},
			[]string{"--addr", "99999", "0 to 65535"}},
		{"demo_stray_argument", nil, []string{"demo", "--verbose"},
			[]string{"unexpected", `"--verbose"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runBinaryEnv(t, tc.env, tc.args...)
			if code != 2 {
				t.Errorf("shop %q with %q: exit %d, want 2; output:\n%s", tc.args, tc.env, code, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("shop %q with %q: output does not say %q:\n%s", tc.args, tc.env, want, out)
				}
			}
		})
	}
}

// runBinaryEnv is runBinary with env added to the environment.
func runBinaryEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SHOP_") && !strings.HasPrefix(e, "MCP_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee) && ctx.Err() == nil:
		return ee.ExitCode(), out.String()
	}
	return -1, out.String()
}

// TestReview18AdminWritesValueWarned: only MCP_ENABLE_ADMIN_WRITES=true
// registers the admin writes (as in the seed, "TRUE", "1" and "yes" do
// not). An operator who wrote one of those got the admin writes off and
// no word of it but admin_writes=false at the end of the start line; the
// start now warns that the value is not "true", and the writes stay off.
// "false" and an unset variable say nothing.
func TestReview18AdminWritesValueWarned(t *testing.T) {
	for _, tc := range []struct {
		value string
		warn  bool
	}{{"1", true}, {"TRUE", true}, {"yes", true}, {" true", true}, {"false", false}, {"", false}} {
		t.Run(tc.value, func(t *testing.T) {
			cmd := exec.Command(bin, "--gateway", "http://127.0.0.1:1")
			for _, e := range os.Environ() {
				if !strings.HasPrefix(e, "SHOP_") && !strings.HasPrefix(e, "MCP_") {
					cmd.Env = append(cmd.Env, e)
				}
			}
			cmd.Env = append(cmd.Env, "MCP_ENABLE_ADMIN_WRITES="+tc.value)
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
			if !strings.Contains(out, "admin_writes=false") {
				t.Errorf("MCP_ENABLE_ADMIN_WRITES=%q turned the admin writes on:\n%s", tc.value, out)
			}
			warned := strings.Contains(out, `MCP_ENABLE_ADMIN_WRITES is not \"true\"`) // as the log quotes it
			if warned != tc.warn {
				t.Errorf("MCP_ENABLE_ADMIN_WRITES=%q: warned %t, want %t; output:\n%s", tc.value, warned, tc.warn, out)
			}
		})
	}
}
