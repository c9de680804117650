package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// TestIntrospectionProbeAcceptedRefused: an endpoint that calls the
// gateway's made-up start probe an active token of this audience, with a
// subject, would accept any token: it does not check tokens, or it is not
// the endpoint meant (a stub, a test double left in a deployment). The
// start probe exists to catch such a configuration, and must stop the
// start there, as it does for wrong credentials; before, the gateway
// started and let every token through, the probe's own cached as an admin.
func TestIntrospectionProbeAcceptedRefused(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	t.Setenv(introspectIDEnv, gwClientID)
	t.Setenv(introspectSecretEnv, gwSecret)
	e := newGWEndpoint(t)
	e.activate(introspectProbe, "anyone", "admin", "mcp-gateway")
	down := newRecorder(t)

	base, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", down.URL+"/mcp",
		"--introspect", e.URL, "--introspect-audience", "mcp-gateway")
	if base != "" {
		defer stop()
		before := down.len()
		status := callTool(t, base, "admin_reset_key", introspectProbe)
		t.Fatalf("the gateway started although the endpoint accepted its made-up probe token; "+
			"that token then got status %d, %d requests forwarded; logs:\n%s", status, down.len()-before, logs)
	}
	if err == nil || !strings.Contains(err.Error(), "accepted the made-up token") {
		t.Errorf("err %v, want one saying the endpoint accepted the made-up token", err)
	}
	if n := e.count(introspectProbe); n != 1 {
		t.Errorf("the endpoint was asked about the probe %d times, want 1", n)
	}
}
