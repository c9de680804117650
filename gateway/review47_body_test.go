package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpguard/mcpguard/policy"
)

// TestReview47WriteRequestMemoryBody pins writeRequest on the gateway's own
// in-memory body (bodyReader), which it writes whole, without a
// LimitReader, only when its length is the Content-Length: one longer is
// cut to the Content-Length, one shorter is an error with nothing written,
// as any other body.
func TestReview47WriteRequestMemoryBody(t *testing.T) {
	const head = " /mcp HTTP/1.1\r\nHost: 127.0.0.1:1\r\n"
	for _, tc := range []struct {
		name    string
		length  int64
		body    string
		want    string
		wantErr string
	}{
		{name: "its_length", length: 11, body: "hello world", want: "POST" + head + "Content-Length: 11\r\n\r\nhello world"},
		{name: "longer_cut", length: 5, body: "hello world", want: "POST" + head + "Content-Length: 5\r\n\r\nhello"},
		{name: "shorter_fails", length: 20, body: "hello world", wantErr: "gateway: request body has 11 bytes, Content-Length 20"},
		{name: "big", length: 100 << 10, body: strings.Repeat("x", 100<<10),
			want: "POST" + head + "Content-Length: 102400\r\n\r\n" + strings.Repeat("x", 100<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = tc.length
			got, err := review38Write(t, req, newBodyReader([]byte(tc.body)))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("writeRequest(length %d, %d bytes): err %v, want %q", tc.length, len(tc.body), err, tc.wantErr)
				}
				if got != "" {
					t.Errorf("writeRequest(length %d, %d bytes) wrote %d bytes, want none", tc.length, len(tc.body), len(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("writeRequest(length %d, %d bytes): %v", tc.length, len(tc.body), err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("writeRequest(length %d, %d bytes) wrote (-want +got):\n%s", tc.length, len(tc.body), diff)
			}
		})
	}
}

// TestReview47OutboundHeaderValuesApart pins what outboundHeader's comment
// promises of the four values it sets from one array: each is capped at its
// own length, so that a RoundTripper that appends to one (a value more for
// Accept-Encoding, say) cannot overwrite the next, the subject, role or
// request id the downstream trusts.
func TestReview47OutboundHeaderValuesApart(t *testing.T) {
	pr := &policy.Principal{Subject: "alice", Roles: []string{"viewer", "auditor"}}
	out := outboundHeader(http.Header{"Content-Type": {"application/json"}}, pr, "cid-1")
	want := map[string]string{"Accept-Encoding": "identity", HeaderSubject: "alice", HeaderRole: "viewer,auditor", HeaderRequestID: "cid-1"}
	for k := range want {
		_ = append(out[k], "appended by "+k)
	}
	for k, v := range want {
		if got := out[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q after appends to each value, want [%q]", k, got, v)
		}
	}
}
