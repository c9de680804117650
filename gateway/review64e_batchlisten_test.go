package gateway

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReview64eBatchListenCapped: a subscriptions/listen request sent as a
// batch member counts against Options.MaxStreams as a single one does. The
// package doc: "A principal holds at most Options.MaxStreams (32 by
// default) GET and subscriptions/listen streams open at once, each from
// when it is sent downstream until it ends: one more is refused (-32029,
// 429, CONCURRENCY_LIMIT_EXCEEDED), never forwarded". Each listen member of
// a batch was forwarded uncounted, up to 16 of one batch at once, each
// holding a downstream connection and goroutines while its downstream kept
// the stream open, so one principal could hold any number of listen
// streams (and the downstream's work for each) by sending batches; and
// while a batch held them, a single listen was still let through.
func TestReview64eBatchListenCapped(t *testing.T) {
	d := newStreamDown()
	g, base := r27Gateway(t, d, Options{MaxStreams: 1, Timeout: 5 * time.Second}, nil)
	var members []string
	for i := range 4 {
		members = append(members, strings.Replace(r27Listen, `"l-1"`, `"l-`+strconv.Itoa(i)+`"`, 1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp",
		strings.NewReader("["+strings.Join(members, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", viewer)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b), err}
	}()
	// Wait for the first listen to reach the downstream, then see whether
	// a single listen is let through beside it.
	for deadline := time.Now().Add(3 * time.Second); d.received() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no listen of the batch reached the downstream")
		}
	}
	single := r27Open(t, base, viewer, true)
	single.close()
	// End the downstream's streams one by one until the batch is answered.
	var res result
wait:
	for {
		select {
		case res = <-done:
			break wait
		case d.end <- struct{}{}:
		case <-ctx.Done():
			t.Fatal("the batch was not answered")
		}
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if single.status != http.StatusTooManyRequests {
		t.Errorf("a single listen while the batch held one: status %d, want 429", single.status)
	}
	// The single listen, if refused, never reached the downstream: all it
	// received came from the batch.
	fromBatch := d.received()
	if single.status == http.StatusOK {
		fromBatch--
	}
	if fromBatch != 1 {
		t.Errorf("%d of the batch's 4 listens reached the downstream, want 1 (MaxStreams 1)", fromBatch)
	}
	if n := strings.Count(res.body, "CONCURRENCY_LIMIT_EXCEEDED"); n != 3 {
		t.Errorf("%d members refused CONCURRENCY_LIMIT_EXCEEDED, want 3; answer %s", n, res.body)
	}
	r27WaitCounted(t, g, 0, "after the batch")
}
