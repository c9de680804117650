package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// TestReview60HiddenBesideDefaultWarned: a --policy file that hides tools
// ("show_forbidden" false, a role rule) and has a "default" rule cannot
// keep a hidden tool from being told apart from a missing one: the
// gateway answers the first (-32601), the downstream the second (a name
// the default covers is forwarded), each in its own words. The README
// says the gateway warns of this at start; a file without a default, or
// one that shows forbidden tools, gets no such warning.
func TestReview60HiddenBesideDefaultWarned(t *testing.T) {
	oldArgs, oldFlags := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = oldArgs, oldFlags })
	for _, tc := range []struct {
		doc  string
		warn bool
	}{
		{`{"role_rules":[{"pattern":"admin_*","roles":["admin"]}],"default":{"class":"read"}}`, true},
		{`{"tools":[{"name":"stats","class":"read","roles":["ops"]}],"default":{"class":"read"}}`, true},
		{`{"role_rules":[{"pattern":"admin_*","roles":["admin"]}],"default":{"class":"read"},"show_forbidden":true}`, false},
		{`{"tools":[{"name":"get","class":"read"},{"name":"admin_x","class":"read"}],"role_rules":[{"pattern":"admin_*","roles":["admin"]}]}`, false},
		{`{"default":{"class":"read"}}`, false},
	} {
		url, err, stop, logs := startRun(t, "--host", "127.0.0.1", "--port", "0", "--upstream", "http://127.0.0.1:1/mcp", "--policy", writePolicy(t, tc.doc))
		if err != nil || url == "" {
			t.Fatalf("%s: start: %v\n%s", tc.doc, err, logs)
		}
		stop()
		if got := strings.Contains(logs.String(), "can tell a hidden tool from a missing one"); got != tc.warn {
			t.Errorf("%s: warned %v, want %v; logs:\n%s", tc.doc, got, tc.warn, logs)
		}
	}
}
