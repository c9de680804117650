package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
)

// TestReview27DocsRefusedBodyRecords checks the records the package doc
// and Options.Audit describe for a POST refused before its messages could
// be read: without a valid token, a body the gateway does not read (over
// 64 KiB, or encoded) gets one record without a tool or subject, a
// tools/call in it included; once the caller is authenticated, a body
// refused as too large or encoded gets one record that names the caller.
func TestReview27DocsRefusedBodyRecords(t *testing.T) {
	big := call(`1`, "get_customer_record", `{"pad":"`+strings.Repeat("x", 70<<10)+`"}`)
	for _, tc := range []struct {
		name, auth, body, encoding string
		max                        int64
		status                     int
		code, subject              string
	}{
		{"stranger_long_body", "", big, "", 0, http.StatusUnauthorized, "UNAUTHENTICATED", ""},
		{"stranger_encoded_body", "", call(`1`, "get_customer_record", ""), "gzip", 0, http.StatusUnauthorized, "UNAUTHENTICATED", ""},
		{"caller_too_large", viewer, big, "", 1 << 10, http.StatusRequestEntityTooLarge, "INVALID_REQUEST", "viewer"},
		{"caller_encoded", viewer, call(`1`, "get_customer_record", ""), "gzip", 0, http.StatusUnsupportedMediaType, "INVALID_REQUEST", "viewer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			rg := newRig(t, &Options{Audit: sink, MaxBodyBytes: tc.max})
			req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", io.MultiReader(strings.NewReader(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("POST: %d %s, want %d", resp.StatusCode, b, tc.status)
			}
			sink.mu.Lock()
			evs := append([]audit.Event(nil), sink.evs...)
			sink.mu.Unlock()
			if len(evs) != 1 {
				t.Fatalf("%d records %+v, want 1", len(evs), evs)
			}
			e := evs[0]
			if e.Tool != "" || e.Allowed || e.Phase != audit.PhaseOutcome || e.Subject != tc.subject || !strings.Contains(e.Code, tc.code) {
				t.Errorf("record %+v, want an outcome without a tool, refused (%s), subject %q", e, tc.code, tc.subject)
			}
		})
	}
}
