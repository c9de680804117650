package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview61FailOpenRecorded: a call the limiter admitted only because
// its store failed (FailOpenReads) was recorded as any allowed call, full
// cost, empty detail: the trail of an outage did not tell the calls that
// ran without their caps (only the log did). Its outcome's detail says so
// now (audit.DetailFailOpen); a call admitted by a working store does not.
func TestReview61FailOpenRecorded(t *testing.T) {
	for _, down := range []bool{true, false} {
		store := limiter.StoreFunc(func(context.Context, time.Time, *limiter.Batch) error {
			return errors.New("review61: store down")
		})
		opts := &limiter.Options{Store: store, FailOpenReads: true}
		if !down {
			opts = nil
		}
		lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		rg := newRig(t, &Options{Audit: sink, Limiter: lim})
		if got := rg.post(t, viewer, call(`1`, "get_customer_record", `{"id":"c1"}`)); got.status != http.StatusOK {
			t.Fatalf("store down %v: status %d: %s", down, got.status, got.body)
		}
		outs := sink.outcomes("get_customer_record")
		if len(outs) != 1 || !outs[0].Allowed {
			t.Fatalf("store down %v: outcome records %+v", down, outs)
		}
		if says := strings.Contains(outs[0].Detail, audit.DetailFailOpen); says != down {
			t.Errorf("store down %v: detail %q", down, outs[0].Detail)
		}
	}
}
