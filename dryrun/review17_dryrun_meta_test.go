package dryrun_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/dryrun"
)

// TestRequestedIgnoresArguments: the preview flag is the client's, in the
// request's _meta; the arguments are the model's. Whatever the arguments
// hold (the key itself, a "_meta" object, a "dry_run" field), Requested
// reads only params._meta, so the model can neither turn a preview the
// client asked for into a write, nor pass for the client.
func TestRequestedIgnoresArguments(t *testing.T) {
	tests := []struct {
		name string
		json string
		want bool
	}{
		{"client_asks_model_says_false", `{"name":"refund","arguments":{"io.mcpguard/dryRun":false,"_meta":{"io.mcpguard/dryRun":false},"dry_run":false},"_meta":{"io.mcpguard/dryRun":true}}`, true},
		{"only_model_asks", `{"name":"refund","arguments":{"io.mcpguard/dryRun":true,"_meta":{"io.mcpguard/dryRun":true},"dry_run":true}}`, false},
		{"nested_meta_in_arguments_only", `{"name":"refund","arguments":{"params":{"_meta":{"io.mcpguard/dryRun":true}}},"_meta":{"progressToken":"p"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p mcp.CallToolParamsRaw
			if err := json.Unmarshal([]byte(tt.json), &p); err != nil {
				t.Fatal(err)
			}
			if got := dryrun.Requested(p.Meta); got != tt.want {
				t.Errorf("Requested(_meta of %s) = %v, want %v", tt.json, got, tt.want)
			}
		})
	}
}
