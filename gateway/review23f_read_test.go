package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestReview23fTransportBodyPanicBeforeTheAnswer: a custom Transport's
// answer body that panics in Read before the gateway began its own answer
// (a batch member's, read whole first) fails the call as a broken answer
// of the downstream does (-32003, UPSTREAM_UNAVAILABLE), logged, as
// Options.Transport's doc now says; it said -32603 INTERNAL with 500,
// which only a panic of RoundTrip gets.
func TestReview23fTransportBodyPanicBeforeTheAnswer(t *testing.T) {
	tr := &panicky{}
	tr.armed.Store(true)
	tr.body.Store(true)
	rg := newRig(t, &Options{Transport: tr})
	got := rg.post(t, viewer, "["+call(`1`, "get_customer_record", "")+"]")
	if got.status != http.StatusOK || !strings.Contains(got.body, `"id":1,"error":{"code":-32003`) ||
		!strings.Contains(got.body, `"UPSTREAM_UNAVAILABLE"`) {
		t.Errorf("batch answer %d %s, want the member failed with -32003 UPSTREAM_UNAVAILABLE", got.status, got.body)
	}
	if !strings.Contains(rg.logs.String(), "the Transport panicked") {
		t.Errorf("the panic is not logged:\n%s", rg.logs)
	}
}
