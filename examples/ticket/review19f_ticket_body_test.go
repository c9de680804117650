package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/internal/jsondepth"
)

// TestReview19fRESTBodyOnlyJSONWhitespace: the body check trimmed the
// body with bytes.TrimSpace, which takes off Unicode white space too (a
// no-break space, U+2028, a form feed, a vertical tab): a body of such
// characters alone passed for an empty one (no arguments, 200), and an
// object with one of them before or after it passed for the object, where
// JSON allows only space, tab, CR and LF around a value and the README
// refuses anything after the object. Each refusal is audited under the
// correlation id its 400 carries.
func TestReview19fRESTBodyOnlyJSONWhitespace(t *testing.T) {
	ta := newTestApp(t, func(c *config) { c.RateLimit.CallsPerMin = 1000 })
	base := startHTTP(t, ta)
	const obj = `{"arguments":{}}`
	for _, c := range []struct{ name, body string }{
		{"no_break_space_alone", "\u00a0"},
		{"form_feed_alone", "\f"},
		{"vertical_tab_alone", "\v"},
		{"line_separator_alone", "\u2028"},
		{"next_line_alone", "\u0085"},
		{"no_break_space_after", obj + "\u00a0"},
		{"ideographic_space_before", "\u3000" + obj},
		{"vertical_tab_before", "\v" + obj},
		{"form_feed_after", obj + "\f"},
		{"byte_order_mark", "\ufeff" + obj},
		{"number", `5`},
		{"string", `"arguments"`},
		{"true", `true`},
		{"empty_member_after_arguments", `{"arguments":{},"":{}}`},
		{"empty_object_member_after_arguments", `{"arguments":{"query":""},"x":{}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := restPost(t, base, "list_tools", "token-alice", "ws", c.body)
			e, _ := rep.body["error"].(map[string]any)
			msg, _ := e["message"].(string)
			corr, _ := e["correlation_id"].(string)
			if rep.status != http.StatusBadRequest || rep.code() != "INVALID_ARGUMENTS" || !strings.HasPrefix(msg, "body must be") || corr == "" {
				t.Fatalf("body %q: %d %s %q (correlation id %q), want 400 INVALID_ARGUMENTS body must be ..., with a correlation id", c.body, rep.status, rep.code(), msg, corr)
			}
			evs := ta.events(t, audit.Filter{CorrelationID: corr})
			if len(evs) != 1 || evs[0].Allowed || evs[0].Code != "INVALID_ARGUMENTS" || evs[0].Subject != "alice" || evs[0].Tool != "list_tools" {
				t.Errorf("body %q: records %+v, want one INVALID_ARGUMENTS refusal of alice's list_tools", c.body, evs)
			}
		})
	}
	// JSON's own white space around the object, or alone, is still fine.
	for _, body := range []string{" \t\r\n", "\r\n" + obj + "\n", "\t" + obj} {
		if rep := restPost(t, base, "list_tools", "token-alice", "ws", body); rep.status != http.StatusOK {
			t.Errorf("body %q: %d %v, want 200", body, rep.status, rep.body)
		}
	}
}

// TestReview19fRESTBodyTrickyInput: input meant to make the depth count
// (jsondepth.Of) or the shape reading (restArguments) see another body than
// JSON does. Strings holding brackets, quotes and backslashes do not
// count as nesting: the arguments reach the guard, whose answer is the
// one over MCP. "arguments" spelt with an escape is "arguments" to JSON.
// A body of 1 MiB of '[' is refused at once, audited.
func TestReview19fRESTBodyTrickyInput(t *testing.T) {
	ta := newTestApp(t, func(c *config) { c.RateLimit.CallsPerMin = 1000 })
	base := startHTTP(t, ta)
	deepString := strings.Repeat("[", 1500) + strings.Repeat("{", 1500)
	for _, c := range []struct{ name, args string }{
		// 3000 brackets inside a string: over the go-sdk's depth if they
		// were counted; the guard refuses the string as too long.
		{"brackets_in_a_string", `{"query":"` + deepString + `"}`},
		{"brackets_after_escaped_quotes", `{"query":"\\\"` + deepString + `\\\""}`},
		{"escaped_backslash_then_quote", `{"query":"\\\\\"` + deepString + `"}`},
		{"brackets_in_a_name", `{"` + deepString + `":1}`},
		{"escaped_quotes_and_backslashes", `{"query":"\\\"\\\\\"\\\"[{"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.args)) {
				t.Fatalf("test arguments are not JSON: %q", c.args)
			}
			over := ta.call(t, "token-alice", "mcp-"+c.name, "search_docs", json.RawMessage(c.args))
			var want any = "(allowed)"
			if over.code != "" {
				want = over.content["error"].(map[string]any)["message"]
			}
			rep := restPost(t, base, "search_docs", "token-alice", "rest-"+c.name, `{"arguments":`+c.args+`}`)
			var got any = "(allowed)"
			if rep.status != http.StatusOK {
				e, _ := rep.body["error"].(map[string]any)
				got = e["message"]
			}
			if got != want || (over.code == "") != (rep.status == http.StatusOK) {
				t.Errorf("REST: %d %q, want %q as over MCP", rep.status, got, want)
			}
		})
	}
	for _, body := range []string{
		`{"\u0061rguments":{"query":""}}`,
		`{"arguments":{"query":"\\\"]]]}}}\\"}}`,
		` {"arguments" :{"query":"\"[\""}} `,
	} {
		if rep := restPost(t, base, "search_docs", "token-alice", "tricky", body); rep.status != http.StatusOK {
			t.Errorf("body %q: %d %v, want 200", body, rep.status, rep.body)
		}
	}
	rep := restPost(t, base, "search_docs", "token-alice", "tricky", strings.Repeat("[", maxRESTBody))
	e, _ := rep.body["error"].(map[string]any)
	corr, _ := e["correlation_id"].(string)
	if rep.status != http.StatusBadRequest || rep.code() != "INVALID_ARGUMENTS" || corr == "" {
		t.Fatalf("1 MiB of '[': %d %v, want 400 INVALID_ARGUMENTS with a correlation id", rep.status, rep.body)
	}
	if evs := ta.events(t, audit.Filter{CorrelationID: corr}); len(evs) != 1 || evs[0].Code != "INVALID_ARGUMENTS" {
		t.Errorf("1 MiB of '[': records %+v, want one INVALID_ARGUMENTS refusal", evs)
	}
	if rep := restPost(t, base, "search_docs", "token-alice", "tricky", `{"arguments":{"query":""}}`); rep.status != http.StatusOK {
		t.Errorf("the next call in the session: %d %v, want 200", rep.status, rep.body)
	}
}

// TestReview19fJSONDepthAgreesWithTheGoSDK: jsondepth.Of counts as the
// go-sdk's depth check does (its internal/json checkMaxDepth, which
// skips strings, an escape taking the next byte): on the tricky strings
// above, and on every prefix of them.
func TestReview19fJSONDepthAgreesWithTheGoSDK(t *testing.T) {
	// sdkDepth is the go-sdk v1.8.0's checkMaxDepth, returning the depth.
	sdkDepth := func(data []byte) int {
		depth, deepest, inString, escaped := 0, 0, false, false
		for _, b := range data {
			if inString {
				switch {
				case escaped:
					escaped = false
				case b == '\\':
					escaped = true
				case b == '"':
					inString = false
				}
				continue
			}
			switch b {
			case '"':
				inString = true
			case '{', '[':
				depth++
				deepest = max(deepest, depth)
			case '}', ']':
				if depth > 0 {
					depth--
				}
			}
		}
		return deepest
	}
	for _, s := range []string{
		`{"a":"\\\"[[[","b":[[["\\\\"]]],"c":"\\\\\"{{{"}`,
		`{"\\":[{"\"":[["]]]"]]}]}`,
		`[[["\u005c"]]]`,
		`{"a":"[[[\\"}[[`,
	} {
		for i := 0; i <= len(s); i++ {
			if got, want := jsondepth.Of([]byte(s[:i])), sdkDepth([]byte(s[:i])); got != want {
				t.Errorf("jsondepth.Of(%q) = %d, the go-sdk's count %d", s[:i], got, want)
			}
		}
	}
}
