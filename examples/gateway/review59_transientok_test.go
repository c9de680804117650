package main

import (
	"flag"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestReview59TransientStatusOKFlag: --transient-status-ok answers a call
// refused because the downstream is down 200 with its -32003 error, where
// without the flag it is 502 (gateway.Options.TransientStatusOK).
func TestReview59TransientStatusOKFlag(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, tc := range []struct {
		flags  []string
		status int
	}{
		{nil, http.StatusBadGateway},
		{[]string{"--transient-status-ok"}, http.StatusOK},
	} {
		// A downstream no one listens on: every call is -32003.
		args := append([]string{"--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp"}, tc.flags...)
		url, err, stop, logs := startRun(t, args...)
		if url == "" {
			t.Fatalf("%v: run: %v; logs:\n%s", tc.flags, err, logs)
		}
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","arguments":{}}}`))
		req.Header.Set("Authorization", "Bearer viewer-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = io.Copy(&body, resp.Body)
		resp.Body.Close()
		stop()
		if resp.StatusCode != tc.status || !strings.Contains(body.String(), `"code":-32003`) {
			t.Errorf("%v: status %d, body %s; want %d with -32003", tc.flags, resp.StatusCode, body.String(), tc.status)
		}
	}
}
