package gateway

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
)

// TestRefusalsWithoutToolAreAudited: every refused request has a record,
// not only tools/calls and bodies that could not be read. An
// unauthenticated initialize is the first probe there is, and an attempt
// on another principal's session the clearest sign of an attack; both
// were answered with no trace in the audit trail. The record carries the
// correlation id of the answer.
func TestRefusalsWithoutToolAreAudited(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	// The admin's call binds sess-1 (the downstream names it) to the admin.
	if got := rg.post(t, admin, call(`1`, "get_customer_record", ""), "Mcp-Session-Id", "sess-1"); got.status != http.StatusOK {
		t.Fatalf("admin: %d %s", got.status, got.body)
	}
	get := func(auth, session string) reply {
		req, _ := http.NewRequest(http.MethodGet, rg.url+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{resp.StatusCode, resp.Header, string(b)}
	}
	for _, tc := range []struct {
		name          string
		send          func() reply
		status        int
		code, subject string
	}{
		{"post_unauthenticated", func() reply { return rg.post(t, "", initialize) }, 401, "UNAUTHENTICATED", ""},
		{"post_bad_token", func() reply {
			return rg.post(t, "Bearer nope", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		}, 401, "UNAUTHENTICATED", ""},
		{"get_unauthenticated", func() reply { return get("", "") }, 401, "UNAUTHENTICATED", ""},
		{"post_foreign_session", func() reply { return rg.post(t, viewer, initialize, "Mcp-Session-Id", "sess-1") }, 404, "FORBIDDEN", "viewer"},
		{"post_bad_session", func() reply { return rg.post(t, viewer, initialize, "Mcp-Session-Id", "a b") }, 400, "INVALID_REQUEST", "viewer"},
		{"get_foreign_session", func() reply { return get(viewer, "sess-1") }, 404, "FORBIDDEN", "viewer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink.mu.Lock()
			before := len(sink.evs)
			sink.mu.Unlock()
			got := tc.send()
			if got.status != tc.status {
				t.Fatalf("status %d %s, want %d", got.status, got.body, tc.status)
			}
			time.Sleep(20 * time.Millisecond)
			sink.mu.Lock()
			evs := slices.Clone(sink.evs[before:])
			sink.mu.Unlock()
			if len(evs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(evs), evs)
			}
			e := evs[0]
			if e.Phase != audit.PhaseOutcome || e.Allowed || e.Code != tc.code || e.Tool != "" || e.Subject != tc.subject || e.CorrelationID == "" {
				t.Errorf("record %+v, want a denied outcome, code %s, no tool, subject %q", e, tc.code, tc.subject)
			}
			if !strings.Contains(got.body, e.CorrelationID) {
				t.Errorf("the answer %s does not name the record's correlation id %s", got.body, e.CorrelationID)
			}
		})
	}
}

// TestAuditRecordsBoundClientHeaders: a record takes the session id and
// protocol version from the request's headers, which any client, an
// unauthenticated one too, sets to what it likes, up to the server's
// header limit (1 MiB by default), and every record of a request repeats
// them: a batch of 256 unauthenticated tools/calls with a 100 KiB header
// made 25 MiB of audit trail. A value that is no session id (or no
// protocol version) is not recorded.
func TestAuditRecordsBoundClientHeaders(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	big := strings.Repeat("x", 100<<10)
	var batch []string
	for i := range 256 {
		batch = append(batch, call(`1`+strings.Repeat("0", i%3), "get_customer_record", ""))
	}
	for _, tc := range []struct {
		name, auth, body string
		hdr              []string
	}{
		{"batch_unauthenticated", "", "[" + strings.Join(batch, ",") + "]", nil},
		{"origin_refused", "", call(`1`, "get_customer_record", ""), []string{"Origin", "https://evil.example"}},
		{"not_json", viewer, "{", nil},
		{"call", viewer, call(`1`, "get_customer_record", ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink.mu.Lock()
			before := len(sink.evs)
			sink.mu.Unlock()
			rg.post(t, tc.auth, tc.body, append(tc.hdr, "Mcp-Session-Id", big, "Mcp-Protocol-Version", big)...)
			time.Sleep(20 * time.Millisecond)
			sink.mu.Lock()
			evs := slices.Clone(sink.evs[before:])
			sink.mu.Unlock()
			if len(evs) == 0 {
				t.Fatal("no record")
			}
			total := 0
			for _, e := range evs {
				total += len(e.SessionID) + len(e.ProtocolVersion)
				if len(e.SessionID) > maxSessionIDLen || len(e.ProtocolVersion) > 64 {
					t.Fatalf("a record holds a session id of %d bytes and a protocol version of %d: the client's headers as sent", len(e.SessionID), len(e.ProtocolVersion))
				}
			}
			t.Logf("%d records, %d bytes of session id and protocol version", len(evs), total)
		})
	}
	// A valid session id and protocol version are recorded as they are.
	sink.mu.Lock()
	before := len(sink.evs)
	sink.mu.Unlock()
	rg.post(t, viewer, call(`1`, "admin_reset_key", ""), "Mcp-Session-Id", "sess-9", "Mcp-Protocol-Version", "2025-11-25")
	sink.mu.Lock()
	evs := slices.Clone(sink.evs[before:])
	sink.mu.Unlock()
	if len(evs) != 1 || evs[0].SessionID != "sess-9" || evs[0].ProtocolVersion != "2025-11-25" {
		t.Errorf("records %+v, want one with session sess-9 and version 2025-11-25", evs)
	}
}

// TestFoldedSpellingsNotForwarded: a downstream that lower-cases names
// with Go's strings.ToLower ("İ" is "i"), upper-cases them ("ı" is "I"),
// or drops default-ignorable characters (a variation selector) would run
// admin_reset_key for these names; the viewer's calls are refused and
// never reach it.
func TestFoldedSpellingsNotForwarded(t *testing.T) {
	rg := newRig(t, nil)
	for _, name := range []string{"adm\u0130n_reset_key", "ADM\u0131N_RESET_KEY", "admin\ufe0f_reset_key", "admin_re\u017fet_key"} {
		received := len(rg.down.log())
		got := rg.post(t, viewer, call(`1`, name, ""))
		if got.status == http.StatusOK || len(rg.down.log()) != received {
			t.Errorf("viewer calls %+q: %d %s, forwarded %d; want refused, not forwarded", name, got.status, got.body, len(rg.down.log())-received)
		}
	}
}
