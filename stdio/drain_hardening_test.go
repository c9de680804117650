package stdio_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDrainLastLineWithoutNewline: `printf '%s' "$requests" | server`
// (no newline after the last request) is as common as the newline-terminated
// form, and the go-sdk's decoder accepts the last message without a newline.
// The drain must still wait for its answer.
func TestDrainLastLineWithoutNewline(t *testing.T) {
	cmd, stderr := child(t)
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy","arguments":{}}}`,
	}, "\n")) // no trailing newline
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, stderr)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		ids = append(ids, string(msg.ID))
	}
	sort.Strings(ids)
	if diff := cmp.Diff([]string{"1", "2"}, ids); diff != "" {
		t.Errorf("answered ids (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
}
