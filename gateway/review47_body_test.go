package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestReview47StreamLastByteAlone checks the end of a relayed event stream
// when its last read hands the gateway one byte alone: that byte is relayed,
// and, the stream's last, decides whether it ended inside a line (cut
// short, a read error for the client) or at a line's end (a clean end).
func TestReview47StreamLastByteAlone(t *testing.T) {
	const event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
	for _, tc := range []struct {
		name   string
		pieces []string
		cut    bool
	}{
		{"inside_a_line", []string{event, "d"}, true},
		{"at_a_line_end", []string{event + "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				io.Copy(io.Discard, r.Body)
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
					Body: &pieceBody{pieces: slices.Clone(tc.pieces), end: io.EOF}}, nil
			})
			g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger(), Timeout: 2 * time.Second, Transport: rt})
			if err != nil {
				t.Fatal(err)
			}
			gw := newServer(t, g)
			status, got, err := readAnswer(t, gw.URL+"/mcp", http.MethodPost, call(`1`, "echo", ""))
			switch {
			case tc.cut && err == nil:
				t.Errorf("a stream ended inside a line read as complete: %d %q", status, got)
			case !tc.cut && err != nil:
				t.Errorf("a complete stream read with error %v: %d %q", err, status, got)
			case !tc.cut && got != strings.Join(tc.pieces, ""):
				t.Errorf("relayed %q, want %q", got, strings.Join(tc.pieces, ""))
			}
		})
	}
}

// endlessEvents is an event stream that goes on, one event every few
// milliseconds, until stop is closed, whatever its request's context says:
// a Transport that does not heed the context (the Transport option does not
// ask it to).
type endlessEvents struct {
	stop <-chan struct{}
	read atomic.Int64
}

func (e *endlessEvents) Read(p []byte) (int, error) {
	select {
	case <-e.stop:
		return 0, io.EOF
	case <-time.After(5 * time.Millisecond):
	}
	e.read.Add(1)
	return copy(p, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"), nil
}

func (*endlessEvents) Close() error { return nil }

// TestReview47StreamEndsWithItsClient checks that a GET's event stream,
// relayed from a Transport whose body streams on whatever its context says,
// ends with its client: the first write that fails (or a context that ended
// before a write) ends the relay and the handler, which does not read the
// stream on for nobody. A POST's answer is drained for its outcome; a GET's
// has none.
func TestReview47StreamEndsWithItsClient(t *testing.T) {
	stop := make(chan struct{})
	body := &endlessEvents{stop: stop}
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body}, nil
	})
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: discardLogger(), Timeout: 5 * time.Second, Transport: rt})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		g.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer close(stop) // before srv.Close, which waits for the handler
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Accept", "text/event-stream")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, err := resp.Body.Read(make([]byte, 64)); err != nil {
		t.Fatalf("first read: %v", err)
	}
	resp.Body.Close() // an unfinished body: the connection is closed
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatalf("the handler still relays a stream whose client left 3 s ago (%d events read)", body.read.Load())
	}
}
