package mcpguard_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOutcomeKeptBySink checks the outcome records the guard hands over to
// a JSONL sink (audit.Keeper): each is recorded once, in call order, with
// the hash of the arguments the call had, also when the caller reuses its
// argument bytes for the next call at once, and for arguments too long to
// copy into the call's own memory.
func TestOutcomeKeptBySink(t *testing.T) {
	pol, err := policy.New(policy.Config{
		Tools: []policy.ToolRule{{Name: "echo", Class: policy.Read}},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenJSONL(path, &audit.JSONLOptions{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := mcpguard.New(pol, fixed(bob), &mcpguard.Options{Audit: sink, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Wrap(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`)}, noop)
	if err != nil {
		t.Fatal(err)
	}
	// One buffer for every call's arguments, as a transport reusing its
	// read buffer would have.
	buf := make([]byte, 0, 8<<10)
	var want []string
	for i := range 700 { // more than the sink keeps before it encodes
		s := strings.Repeat("x", i%3*200) // 0, 200 and 400 bytes: some too long to copy
		buf = append(buf[:0], `{"s":"`...)
		buf = append(buf, s...)
		buf = append(buf, `"}`...)
		want = append(want, audit.ArgsSHA256(json.RawMessage(`{"s":"`+s+`"}`)))
		r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: buf}}
		if res, err := h(context.Background(), r); err != nil || res.IsError {
			t.Fatalf("call %d: %v %s", i, err, mustJSON(res))
		}
		for j := range buf {
			buf[j] = ' ' // the caller's next use of its buffer
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	for ev, err := range audit.ReadJSONL(f) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.ArgsSHA256)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d: args_sha256 %s, want %s", i, got[i], want[i])
		}
	}
}
