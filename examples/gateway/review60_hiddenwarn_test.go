package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// TestReview60HiddenBesideDefaultWarned: a --policy file that hides tools
// ("show_forbidden" false) and has a "default" rule cannot keep a tool
// whose rule asks for roles the default does not from being told apart
// from a missing name: the gateway answers the first (-32601), the
// downstream the second (a name the default covers is forwarded), each in
// its own words. The README says the gateway warns of this at start. No
// warning for a file where no caller can tell them apart: without a
// default, showing forbidden tools, with role rules only (a missing name
// a role rule matches is hidden as a tool is), or whose tools ask only for
// roles the default asks for (the final read's case: every name is hidden
// from, or forwarded for, a caller alike).
func TestReview60HiddenBesideDefaultWarned(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, tc := range []struct {
		doc  string
		warn bool
	}{
		{`{"tools":[{"name":"stats","class":"read","roles":["ops"]}],"default":{"class":"read"}}`, true},
		{`{"tools":[{"name":"stats","class":"read","roles":["ops"]}],"default":{"class":"read","roles":["staff"]}}`, true},
		{`{"tools":[{"name":"stats","class":"read","roles":["ops"]}],"default":{"class":"read"},"show_forbidden":true}`, false},
		{`{"role_rules":[{"pattern":"admin_*","roles":["admin"]}],"default":{"class":"read"}}`, false},
		{`{"default":{"class":"read","roles":["staff"]}}`, false},
		{`{"tools":[{"name":"stats","class":"read","roles":["staff","ops"]}],"default":{"class":"read","roles":["staff"]}}`, false},
		{`{"tools":[{"name":"get","class":"read"},{"name":"admin_x","class":"read"}],"role_rules":[{"pattern":"admin_*","roles":["admin"]}]}`, false},
		{`{"default":{"class":"read"}}`, false},
	} {
		url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--policy", writePolicy(t, tc.doc))
		if err != nil || url == "" {
			t.Fatalf("%s: start: %v\n%s", tc.doc, err, logs)
		}
		stop()
		if got := strings.Contains(logs.String(), "a caller can tell it from a missing one"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v; logs:\n%s", tc.doc, got, tc.warn, logs)
		}
	}
}
