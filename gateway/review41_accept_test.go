package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview41AcceptsSSEWeights: a media range with weight 0 refuses what
// it names (RFC 9110 section 12.5.1), and the most specific range that
// matches text/event-stream decides, whatever their order.
func TestReview41AcceptsSSEWeights(t *testing.T) {
	for _, tc := range []struct {
		accept []string
		want   bool
	}{
		{[]string{"text/event-stream;q=0"}, false},
		{[]string{"application/json, text/event-stream; q=0"}, false},
		{[]string{"text/event-stream;Q=0"}, false},
		{[]string{"text/event-stream;charset=utf-8;q=0"}, false},
		{[]string{"text/event-stream;q=0.000"}, false},
		{[]string{"text/event-stream;q=0."}, false},
		{[]string{"text/event-stream;q=0.001"}, true},
		{[]string{"text/event-stream;q=1.000"}, true},
		{[]string{"*/*;q=0"}, false},
		{[]string{"text/*;q=0"}, false},
		// The more specific range decides, either way round.
		{[]string{"text/event-stream;q=0, */*"}, false},
		{[]string{"*/*, text/event-stream;q=0"}, false},
		{[]string{"text/*;q=0, */*"}, false},
		{[]string{"text/event-stream;q=0, text/*"}, false},
		{[]string{"text/*;q=0", "text/event-stream"}, true},
		{[]string{"*/*;q=0, text/event-stream;q=0.5"}, true},
		{[]string{"*/*;q=0, text/*;q=0.2"}, true},
		// A range listed twice counts at its highest weight.
		{[]string{"text/event-stream;q=0, text/event-stream"}, true},
		{[]string{"text/event-stream", "text/event-stream;q=0"}, true},
		// A weight that is no qvalue counts as 1; a parameter not named q
		// is no weight.
		{[]string{"text/event-stream;q=0.0000"}, true},
		{[]string{"text/event-stream;q=2"}, true},
		{[]string{"text/event-stream;q="}, true},
		{[]string{"text/event-stream;q=0x"}, true},
		{[]string{"text/event-stream;q=0.-1"}, true},
		{[]string{"text/event-stream;q=0.01x"}, true},
		{[]string{"text/event-stream;q=00"}, true},
		{[]string{"text/event-stream;q=.0"}, true},
		{[]string{"text/event-stream;q"}, true},
		{[]string{"text/event-stream;level=0"}, true},
		{[]string{"text/event-stream;qq=0"}, true},
		// Only the first q parameter is read.
		{[]string{"text/event-stream;q=0;q=1"}, false},
		{[]string{"text/html;q=1, application/json"}, false},
	} {
		h := http.Header{}
		for _, v := range tc.accept {
			h.Add("Accept", v)
		}
		if got := acceptsSSE(h); got != tc.want {
			t.Errorf("acceptsSSE(Accept: %q) = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

// TestReview41BatchRefusedStream: a client whose Accept gives event
// streams weight 0 gets a batch's answers as one JSON array, its streamed
// member's response collected from the downstream's stream.
func TestReview41BatchRefusedStream(t *testing.T) {
	rg := newRig(t, nil)
	body := `[` + call(`5`, "stream", "") + `,` + call(`6`, "get_customer_record", "") + `]`
	for _, tc := range []struct {
		accept, ctype string
	}{
		{"application/json, text/event-stream;q=0", "application/json"},
		{"application/json, text/event-stream;q=0.5", "text/event-stream"},
	} {
		req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", viewer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", tc.accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != tc.ctype {
			t.Errorf("Accept %q: Content-Type %q, want %q; body %s", tc.accept, ct, tc.ctype, b)
		}
		if !strings.Contains(string(b), `"id":5,"result":{"done":true}`) {
			t.Errorf("Accept %q: the streamed member's response is missing: %s", tc.accept, b)
		}
	}
}
