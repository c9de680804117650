package gateway

import (
	"encoding/base64"
	"encoding/binary"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/mcpguard/mcpguard/audit"
)

// since returns the records sink took after the first n.
func (s *memSink) since(n int) []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.evs[n:])
}

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.evs)
}

// send sends one request to the rig's gateway with the viewer's token
// unless the headers name another Authorization.
func (rg *rig) send(t *testing.T, method, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, rg.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// TestMethodNotAllowedIsAudited: a request to the MCP path with a method
// the gateway does not serve (405) has its record, as every other refusal,
// and its answer names the record's correlation id. The method is recorded
// in a bounded form: a client chooses it, up to the server's header limit.
func TestMethodNotAllowedIsAudited(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	long := "X" + strings.Repeat("Y", 10000)
	for _, tc := range []struct{ name, method string }{
		{"put", http.MethodPut},
		{"patch", http.MethodPatch},
		{"head", http.MethodHead},
		{"options_without_origin", http.MethodOptions},
		{"made_up", "BREW"},
		{"long", long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, received := sink.count(), len(rg.down.log())
			got := rg.send(t, tc.method, call(`1`, "get_customer_record", ""))
			if got.status != http.StatusMethodNotAllowed || got.header.Get("Allow") != "GET, POST, DELETE" {
				t.Fatalf("%s: status %d, Allow %q, want 405 and GET, POST, DELETE", tc.name, got.status, got.header.Get("Allow"))
			}
			evs := sink.since(before)
			if len(evs) != 1 {
				t.Fatalf("%s: %d records, want 1: %+v", tc.name, len(evs), evs)
			}
			e := evs[0]
			if e.Phase != audit.PhaseOutcome || e.Allowed || e.Code != "INVALID_REQUEST" || e.Tool != "" || e.Subject != "" ||
				e.CorrelationID == "" || !strings.Contains(e.Detail, "not allowed") {
				t.Errorf("%s: record %+v, want a denied outcome, INVALID_REQUEST, a detail saying the method is not allowed, no tool, no subject", tc.name, e)
			}
			if len(e.Detail) > 200 {
				t.Errorf("%s: detail of %d bytes, want it bounded", tc.name, len(e.Detail))
			}
			if tc.method != http.MethodHead && !strings.Contains(got.body, e.CorrelationID) {
				t.Errorf("%s: the answer %q does not name the record's correlation id %s", tc.name, got.body, e.CorrelationID)
			}
			if n := len(rg.down.log()); n != received {
				t.Errorf("%s: the downstream received %d requests, want none", tc.name, n-received)
			}
		})
	}
}

// TestRefusedNameIsRecorded: a tools/call refused for its name (white space
// at an end, an invisible or a control character) is recorded with the
// name, escaped (\u200b, not an invisible character in the trail) and cut
// to a bounded length, in the record's detail; its tool stays empty, since
// no tool of that name was judged.
func TestRefusedNameIsRecorded(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	for _, tc := range []struct{ name, json, want string }{
		{"zero_width_space", `admin_reset_key\u200b`, `"admin_reset_key\u200b"`},
		{"leading_space", ` admin_reset_key`, `" admin_reset_key"`},
		{"trailing_nbsp", `admin_reset_key\u00a0`, `"admin_reset_key\u00a0"`},
		{"control", `admin\u0000reset_key`, `"admin\x00reset_key"`},
		{"bidi_override", `admin\u202eyek_teser`, `"admin\u202eyek_teser"`},
		{"long", strings.Repeat("a", 5000) + `\u200b`, `"` + strings.Repeat("a", 128) + `"...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sink.count()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tc.json + `","arguments":{}}}`
			got := rg.post(t, viewer, body)
			if got.status != http.StatusBadRequest {
				t.Fatalf("status %d %s, want 400", got.status, got.body)
			}
			evs := sink.since(before)
			if len(evs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(evs), evs)
			}
			e := evs[0]
			if e.Tool != "" || e.Code != "INVALID_ARGUMENTS" || !strings.Contains(e.Detail, tc.want) {
				t.Errorf("record tool %q code %s detail %q; want no tool, INVALID_ARGUMENTS, and the name as %s in the detail", e.Tool, e.Code, e.Detail, tc.want)
			}
			if len(e.Detail) > 400 || strings.ContainsFunc(e.Detail, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Errorf("detail %q (%d bytes): want at most 400 bytes of printable ASCII", e.Detail, len(e.Detail))
			}
		})
	}
	// In a batch, each member's record names its own.
	before := sink.count()
	rg.post(t, viewer, `[`+call(`1`, `a\u200b`, "")+`,`+call(`2`, `b `, "")+`]`)
	evs := sink.since(before)
	if len(evs) != 2 || !strings.Contains(evs[0].Detail, `"a\u200b"`) || !strings.Contains(evs[1].Detail, `"b "`) {
		t.Errorf("batch records %+v, want the two names, each in its member's record", evs)
	}
}

// TestSessionRefusalRecordsNoUnreadArguments: a tools/call refused for its
// session whose params could not be read is recorded without arguments,
// as the same call refused by a decision or for its credentials is: the
// gateway did not understand them.
func TestSessionRefusalRecordsNoUnreadArguments(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	if got := rg.post(t, admin, call(`1`, "get_customer_record", ""), "Mcp-Session-Id", "sess-1"); got.status != http.StatusOK {
		t.Fatalf("admin: %d %s", got.status, got.body)
	}
	for _, tc := range []struct{ name, body string }{
		{"arguments_not_object", call(`1`, "get_customer_record", `5`)},
		{"bad_name", call(`1`, `get_customer_record\u200b`, `{"a":1}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sink.count()
			if got := rg.post(t, viewer, tc.body, "Mcp-Session-Id", "sess-1"); got.status != http.StatusNotFound {
				t.Fatalf("viewer on the admin's session: %d %s, want 404", got.status, got.body)
			}
			evs := sink.since(before)
			if len(evs) != 1 || evs[0].Code != "FORBIDDEN" || evs[0].ArgsSHA256 != "" {
				t.Errorf("records %+v, want one FORBIDDEN record without args_sha256", evs)
			}
		})
	}
}

// TestIdleSessionKeepsItsBinding pins the decision not to expire idle
// bindings: the gateway cannot tell when its downstream has dropped a
// session (the go-sdk keeps them forever by default), and a binding that
// expired while the session lived would let another principal who learnt
// its id take it over. A year of silence changes nothing.
func TestIdleSessionKeepsItsBinding(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	rg := newRig(t, &Options{Now: clock})
	if got := rg.post(t, admin, call(`1`, "get_customer_record", ""), "Mcp-Session-Id", "sess-1"); got.status != http.StatusOK {
		t.Fatalf("admin: %d %s", got.status, got.body)
	}
	now = now.Add(365 * 24 * time.Hour)
	received := len(rg.down.log())
	if got := rg.post(t, viewer, call(`2`, "get_customer_record", ""), "Mcp-Session-Id", "sess-1"); got.status != http.StatusNotFound {
		t.Errorf("viewer on the admin's session idle for a year: %d %s, want 404", got.status, got.body)
	}
	if n := len(rg.down.log()); n != received {
		t.Errorf("the downstream received %d of the viewer's requests, want none", n-received)
	}
	if got := rg.post(t, admin, call(`3`, "get_customer_record", ""), "Mcp-Session-Id", "sess-1"); got.status != http.StatusOK {
		t.Errorf("admin back on its own session: %d %s, want 200", got.status, got.body)
	}
}

// utf7 returns s in UTF-7's base64 form, "+...-".
func utf7(s string) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.BigEndian.AppendUint16(b, u)
	}
	return "+" + base64.RawStdEncoding.EncodeToString(b) + "-"
}

// TestBodyReadOtherwiseIsRefused: the gateway judges the body's bytes as
// UTF-8 JSON, so a POST that declares them to be anything else is refused
// (415) and never forwarded. A TypeScript SDK downstream decodes the body
// in the charset its Content-Type names (raw-body, iconv-lite): in UTF-7
// the viewer's get_customer_record below reads as admin_reset_key. An
// Express downstream (express.json()) inflates a compressed body, which the
// gateway has read as it was sent.
func TestBodyReadOtherwiseIsRefused(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	smuggled := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_customer_record","x":"` +
		utf7(`","name":"admin_reset_key`) + `"}}`
	for _, tc := range []struct {
		name, body string
		hdr        []string
	}{
		{"utf7", smuggled, []string{"Content-Type", "application/json; charset=utf-7"}},
		{"utf7_quoted_upper", smuggled, []string{"Content-Type", `application/json; CHARSET="UTF-7"`}},
		{"utf7_rfc2231", smuggled, []string{"Content-Type", "application/json; charset*=utf-7''"}},
		{"utf8_then_utf7", smuggled, []string{"Content-Type", "application/json; charset=utf-8; charset=utf-7"}},
		{"latin1", smuggled, []string{"Content-Type", "application/json; charset=iso-8859-1"}},
		{"unparsable_with_charset", smuggled, []string{"Content-Type", "application/json; charset = utf-7"}},
		{"deflate", call(`1`, "get_customer_record", ""), []string{"Content-Encoding", "deflate"}},
		{"gzip_upper", call(`1`, "get_customer_record", ""), []string{"Content-Encoding", "GZIP"}},
		{"identity_then_br", call(`1`, "get_customer_record", ""), []string{"Content-Encoding", "identity, br"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, received := sink.count(), len(rg.down.log())
			got := rg.send(t, http.MethodPost, tc.body, tc.hdr...)
			if got.status != http.StatusUnsupportedMediaType {
				t.Errorf("status %d %s, want 415", got.status, got.body)
			}
			if n := len(rg.down.log()); n != received {
				t.Errorf("the downstream received %q, want nothing", rg.down.bodies()[received:])
			}
			evs := sink.since(before)
			if len(evs) != 1 || evs[0].Code != "INVALID_REQUEST" || evs[0].Allowed || !strings.Contains(got.body, evs[0].CorrelationID) {
				t.Errorf("records %+v, want one INVALID_REQUEST refusal named in the answer %s", evs, got.body)
			}
		})
	}
	// UTF-8, said in any case, and no coding or identity pass.
	for _, hdr := range [][]string{
		{"Content-Type", "application/json; charset=utf-8"},
		{"Content-Type", `application/json; Charset="UTF-8"`},
		{"Content-Type", "application/json", "Content-Encoding", "identity"},
	} {
		if got := rg.send(t, http.MethodPost, call(`1`, "get_customer_record", ""), hdr...); got.status != http.StatusOK {
			t.Errorf("%q: status %d %s, want 200", hdr, got.status, got.body)
		}
	}
}

// TestExpectNotForwarded: the gateway has read the whole body before it
// forwards a request, so a client's Expect: 100-continue is met and not
// passed on: a downstream (or a net/http Transport, which waits up to a
// second for the 100) would otherwise wait for a go-ahead that concerns a
// body already sent.
func TestExpectNotForwarded(t *testing.T) {
	rg := newRig(t, nil)
	got := rg.send(t, http.MethodPost, call(`1`, "get_customer_record", ""), "Expect", "100-continue")
	if got.status != http.StatusOK {
		t.Fatalf("status %d %s", got.status, got.body)
	}
	batch := `[` + call(`2`, "get_customer_record", "") + `,` + call(`3`, "get_customer_record", "") + `]`
	if got := rg.send(t, http.MethodPost, batch, "Expect", "100-continue"); got.status != http.StatusOK {
		t.Fatalf("batch: status %d %s", got.status, got.body)
	}
	for _, r := range rg.down.log() {
		if v := r.Header.Values("Expect"); len(v) > 0 {
			t.Errorf("the downstream received Expect %q with %s", v, r.Body)
		}
	}
}

// TestMethodSpellingsRefused: a method with white space at an end or an
// invisible or control character is refused (-32600) and never forwarded,
// as a tool name is: the policy applies to "tools/call" only, and a
// downstream that trimmed "tools/call " would run a call nobody judged (or
// answer an unfiltered "tools/list ").
func TestMethodSpellingsRefused(t *testing.T) {
	rg := newRig(t, &Options{FilterToolsList: true})
	for _, method := range []string{`tools/call `, ` tools/call`, `tools/call\u200b`, `tools/call\u00a0`, `tools/call\t`, `tools/list\u2028`, `\ufefftools/call`} {
		received := len(rg.down.log())
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"name":"admin_reset_key","arguments":{}}}`
		got := rg.post(t, viewer, body)
		if _, code, _ := rpcErr(t, got.body); got.status != http.StatusBadRequest || code != CodeInvalidRequest {
			t.Errorf("method %s: status %d %s, want 400 and -32600", method, got.status, got.body)
		}
		if n := len(rg.down.log()); n != received {
			t.Errorf("method %s: the downstream received %q, want nothing", method, rg.down.bodies()[received:])
		}
	}
	// A method spelled plainly passes as before.
	if got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); got.status != http.StatusOK {
		t.Errorf("ping: %d %s", got.status, got.body)
	}
}
