package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReview30BodyPanicRecorded: a custom Transport whose answer's body
// panics when read fails the call UPSTREAM_UNAVAILABLE (its RoundTrip
// returned, the answer had begun), its outcome record saying "the
// Transport panicked", on every path (single, Pins, batch), as doc.go says.
func TestReview30BodyPanicRecorded(t *testing.T) {
	rt := r30Transport(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode:    http.StatusOK,
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        http.Header{"Content-Type": {"application/json"}},
			Body:          panickyBody{io.NopCloser(strings.NewReader(""))},
			ContentLength: -1,
			Request:       r,
		}, nil
	})
	r30Check(t, "http://127.0.0.1:1/mcp", Options{Transport: rt}, "UPSTREAM_UNAVAILABLE", "the Transport panicked")
}
