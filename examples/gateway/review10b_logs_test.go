package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// TestUpstreamCredentialsNotLogged: an --upstream URL may carry a
// credential, a key in its query, which the gateway sends downstream and
// never shows (its health answer and logs strip it). The start's "gateway
// listening" line must not show it either; before, it logged --upstream
// as written. (User information, which the gateway never sends, stops
// the start: TestReview19UsageErrorsExitTwo.)
func TestUpstreamCredentialsNotLogged(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	const queryKey = "qk-Upstream-Wv"
	base, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0",
		"--upstream", "http://127.0.0.1:1/mcp?api_key="+queryKey)
	if base == "" {
		t.Fatalf("gateway did not start: %v; logs:\n%s", err, logs)
	}
	stop()
	l := logs.String()
	if !strings.Contains(l, "gateway listening") || !strings.Contains(l, "127.0.0.1:1/mcp") {
		t.Errorf("start logs: want the listening line naming the upstream:\n%s", l)
	}
	if strings.Contains(l, queryKey) {
		t.Errorf("logs hold %q:\n%s", queryKey, l)
	}
}
