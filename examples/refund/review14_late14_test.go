//go:build unix

package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLate14SIGHUPWithoutAuditFile: with the audit trail on stderr (no
// -audit), SIGHUP, which a log rotator sends every process it was told of,
// is logged and ignored: the server goes on answering, and still ends
// through its shutdown (exit 0) when its client closes stdin.
func TestLate14SIGHUPWithoutAuditFile(t *testing.T) {
	cmd, stderr := command(nil, alice)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "refund-test", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("Connect: %v; stderr:\n%s", err, stderr)
	}
	defer cs.Close()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(stderr.String(), "no audit file to reopen") {
		if ctx.Err() != nil {
			t.Fatalf("no log of the SIGHUP:\n%s", stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, we := call(t, cs, "get_customer_record", map[string]any{"customer_id": "CUST-00001"}); we != nil {
		t.Fatalf("a call after SIGHUP: %v\n%s", we, stderr)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if st := cmd.ProcessState; st == nil || st.ExitCode() != 0 {
		t.Errorf("process state after the client closed: %v, want exit 0; stderr:\n%s", st, stderr)
	}
}
