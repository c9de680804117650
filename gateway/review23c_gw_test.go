package gateway

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statusTransport answers every request with status and a JSON-RPC result,
// as a mock Transport that forgets StatusCode (0) does.
type statusTransport struct{ status int }

func (t statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{StatusCode: t.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`)), ContentLength: -1, Request: r}, nil
}

// TestReview23cTransportBadStatus: a custom Transport whose answer has a
// status no final HTTP answer has (0, as a mock that forgets StatusCode
// gives, past 999, or a 1xx, which the gateway's own client skips or
// refuses) fails the call (502) like any bad answer: the call gives back
// its in-flight place and gets its outcome record. The gateway relayed the
// status: http.ResponseWriter.WriteHeader panicked on 0 and past 999, and
// the place was kept for good (every later call of the caller 429), its
// outcome never written; a 101 was relayed with no answer, recorded as
// relayed; a 103's body went out as a 200 that no pin check read.
func TestReview23cTransportBadStatus(t *testing.T) {
	for _, status := range []int{0, 1000, 42, 103, 101} {
		for _, pins := range []bool{false, true} {
			name := strconv.Itoa(status)
			if pins {
				name += "_pins"
			}
			t.Run(name, func(t *testing.T) {
				lim := oneInFlight(t)
				sink := &codeSink{}
				opts := &Options{Limiter: lim, Audit: sink, Transport: statusTransport{status: status}}
				if pins {
					opts.Pins = TrustOnFirstUse()
				}
				rg := newRig(t, opts)
				for i := range 2 {
					req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(call(`1`, "get_customer_record", "")))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Authorization", viewer)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatalf("call %d: %v (the handler panicked)", i, err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if strings.Contains(string(b), "CONCURRENCY_LIMIT_EXCEEDED") || resp.StatusCode == http.StatusTooManyRequests {
						t.Fatalf("call %d: %d %s: the first call kept its in-flight place", i, resp.StatusCode, b)
					}
					if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), `"code":-32`) {
						t.Errorf("call %d: %d %s, want a 502 error answer", i, resp.StatusCode, b)
					}
				}
				deadline := time.Now().Add(2 * time.Second)
				for {
					n := len(sink.all())
					if n >= 2 || time.Now().After(deadline) {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				codes := sink.all()
				if len(codes) != 2 || codes[0] != "UPSTREAM_UNAVAILABLE" || codes[1] != "UPSTREAM_UNAVAILABLE" {
					t.Errorf("outcome codes %q, want UPSTREAM_UNAVAILABLE for each call", codes)
				}
			})
		}
	}
}
