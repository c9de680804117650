package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// nested returns arguments {"a": [[...]]} nested depth levels deep, the
// arguments object itself counting as the first.
func nested(depth int) string {
	return `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

// TestReview19dRESTDeepArgumentsKeepTheSession: REST arguments nested
// deeper than the go-sdk reads (1000 levels for a whole JSON-RPC message)
// passed the body check, and the server end of the caller's in-memory
// REST session failed to read the call and closed: that call got 500
// INTERNAL and so did every later call of the caller on that
// X-Session-Id, for as long as the process ran. They are refused now
// (400, as the guard refuses arguments nested too deeply), and the
// session goes on.
func TestReview19dRESTDeepArgumentsKeepTheSession(t *testing.T) {
	ta := newTestApp(t, func(c *config) { c.RateLimit.CallsPerMin = 100 })
	base := startHTTP(t, ta)
	for _, c := range []struct {
		name  string
		depth int
	}{
		{"at_the_bound", maxRESTArgsDepth},
		{"one_over", maxRESTArgsDepth + 1},
		{"far_over", 5000},
		{"beyond_encoding_json", 20000},
	} {
		t.Run(c.name, func(t *testing.T) {
			sid := "deep-" + c.name
			rep := restPost(t, base, "list_tools", "token-alice", sid, `{"arguments":`+nested(c.depth)+`}`)
			e, _ := rep.body["error"].(map[string]any)
			if rep.status != http.StatusBadRequest || rep.code() != "INVALID_ARGUMENTS" || e["message"] != "arguments are nested too deeply" {
				t.Errorf("arguments %d deep: %d %s %q, want 400 INVALID_ARGUMENTS %q", c.depth, rep.status, rep.code(), e["message"], "arguments are nested too deeply")
			}
			if rep := restPost(t, base, "list_tools", "token-alice", sid, `{"arguments":{}}`); rep.status != http.StatusOK {
				t.Errorf("the next call in session %s: %d %v, want 200", sid, rep.status, rep.body)
			}
		})
	}
}

// TestReview19dRESTArgumentsReachTheGuard: the body check ran the
// library's argument validator on the whole body, so arguments with a
// duplicate name, invalid UTF-8, an escaped lone surrogate or a number
// beyond the bounds were refused as `body must be a JSON object
// {"arguments": {...}} of at most 1 MiB`, not named as over MCP. The body
// check looks at the body's shape only now; the guard refuses these.
func TestReview19dRESTArgumentsReachTheGuard(t *testing.T) {
	ta := newTestApp(t, func(c *config) { c.RateLimit.CallsPerMin = 100 })
	base := startHTTP(t, ta)
	for _, c := range []struct{ name, args string }{
		{"duplicate_argument", `{"query":"a","query":"b"}`},
		{"duplicate_argument_folded", `{"query":"a","QUERY":"b"}`},
		{"invalid_utf8", "{\"query\":\"a\xffb\"}"},
		{"lone_surrogate", `{"query":"a\ud800b"}`},
		{"lone_surrogate_in_a_name", `{"\udc00":"x"}`},
		{"number_beyond_bounds", `{"query":1e9999999}`},
		{"control_character_in_a_name", `{"qu\u0007ery":"x"}`},
		{"name_over_64_KiB", `{"` + strings.Repeat("k", 70000) + `":"x"}`},
		{"nested_past_the_guards_bound", nested(100)},
	} {
		t.Run(c.name, func(t *testing.T) {
			mcp := ta.call(t, "token-alice", "mcp-"+c.name, "search_docs", json.RawMessage(c.args))
			if mcp.code != "INVALID_ARGUMENTS" {
				t.Fatalf("the guard's answer: code %q %v, want INVALID_ARGUMENTS", mcp.code, mcp.wire)
			}
			want := mcp.content["error"].(map[string]any)["message"]
			rep := restPost(t, base, "search_docs", "token-alice", "rest-"+c.name, `{"arguments":`+c.args+`}`)
			e, _ := rep.body["error"].(map[string]any)
			if rep.status != http.StatusBadRequest || rep.code() != "INVALID_ARGUMENTS" || e["message"] != want {
				t.Errorf("REST: %d %s %q, want 400 INVALID_ARGUMENTS %q (the guard's)", rep.status, rep.code(), e["message"], want)
			}
		})
	}
	// The body's shape is still the body check's, before the guard.
	for _, body := range []string{
		`{"arguments":{"query":""},"x":1}`,
		`{"arguments":{"query":""},"arguments":{"query":""}}`,
		`{"ARGUMENTS":{"query":""}}`,
		`{"arguments":{"query":""}}}`,
		`{"arguments":["query"]}`,
		`{"arguments":"query"}`,
		`{"arguments":{"query":""}`,
		"{\"argum\xffents\":{}}",
		`[]`,
		`"x"`,
	} {
		rep := restPost(t, base, "search_docs", "token-alice", "shape", body)
		e, _ := rep.body["error"].(map[string]any)
		if msg, _ := e["message"].(string); rep.status != http.StatusBadRequest || !strings.HasPrefix(msg, "body must be") {
			t.Errorf("body %q: %d %q, want 400 body must be ...", body, rep.status, msg)
		}
	}
	// An empty or null body, or null arguments, are no arguments.
	for _, body := range []string{``, ` `, `null`, `{}`, `{"arguments":null}`, ` {"arguments" : { } } `} {
		if rep := restPost(t, base, "list_tools", "token-alice", "empty", body); rep.status != http.StatusOK {
			t.Errorf("body %q: %d %v, want 200", body, rep.status, rep.body)
		}
	}
}
