package dryrun

import (
	"encoding/json"
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
)

// Arguments of JSON white space only are empty, as confirm.Describe reads
// them and as ArgsSHA256 takes them: not "with arguments" (found by the
// fuzzer on the summary oracle).
func TestReview23SummaryBlankArgs(t *testing.T) {
	for _, args := range []string{" ", "\t\r\n ", " null "} {
		if _, err := confirm.ArgsSHA256(json.RawMessage(args)); err != nil {
			t.Fatalf("ArgsSHA256(%q): %v", args, err)
		}
		if got, want := Summary("t", json.RawMessage(args)), "Would run t with no arguments"; got != want {
			t.Errorf("Summary(%q) = %q, want %q", args, got, want)
		}
		if got, want := confirm.Describe("t", json.RawMessage(args)), "Run t with no arguments"; got != want {
			t.Errorf("confirm.Describe(%q) = %q, want %q", args, got, want)
		}
	}
}
