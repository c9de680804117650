package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestReview19BatchAnswerBounded checks that a batch's merged JSON answer
// is held to maxUpstreamBody in all, as one JSON answer is: a downstream
// (or a client asking for a large resource 256 times) answering each of 6
// members with 12 MiB would otherwise have the gateway hold all 72 MiB,
// and up to 256 × 64 MiB, before writing one byte. Every member is still
// answered, in the client's order: those past the bound with an upstream
// error, which is logged with the correlation id, principal, method and
// outcome.
func TestReview19BatchAnswerBounded(t *testing.T) {
	const members, size = 6, 12 << 20
	big := strings.Repeat("x", size)
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(b, &m)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"text":"`+big+`"}}`)
	}))
	var logs bytes.Buffer
	var mu sync.Mutex
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w := serveOne(g, http.MethodPost, viewer, pingBatch(members), "Accept", "application/json")
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %.300s", w.Code, w.Body.String())
	}
	if n := w.Body.Len(); n > maxUpstreamBody+64<<10 {
		t.Errorf("the merged answer is %d bytes; want at most about %d (the gateway held every member's answer)", n, maxUpstreamBody)
	}
	// Each answer has one "id" member, and the big strings have no quote:
	// the answers are found without decoding 64 MiB (slow under -race).
	body := w.Body.String()
	if !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		t.Fatalf("the merged answer is not a JSON array: %.200s", body)
	}
	parts := strings.Split(body, `{"jsonrpc":"2.0","id":`)[1:]
	errs := 0
	for i, a := range parts {
		if !strings.HasPrefix(a, strconv.Itoa(i)+",") {
			t.Errorf("answer %d: %.60s; want id %d, in the client's order", i, a, i)
		}
		if strings.HasPrefix(a, strconv.Itoa(i)+`,"error":`) {
			if !strings.HasPrefix(a, strconv.Itoa(i)+`,"error":{"code":`+strconv.Itoa(CodeUpstreamUnavailable)+",") {
				t.Errorf("answer %d: %.200s; want error %d", i, a, CodeUpstreamUnavailable)
			}
			errs++
		}
	}
	if len(parts) != members || errs == 0 {
		t.Errorf("%d answers, %d of them errors; want %d answers, some of them errors", len(parts), errs, members)
	}
	mu.Lock()
	l := logs.String()
	mu.Unlock()
	if !strings.Contains(l, "batch answers over the limit") || !strings.Contains(l, "subject=viewer") || !strings.Contains(l, "method=ping") || !strings.Contains(l, "outcome=UPSTREAM_UNAVAILABLE") {
		t.Errorf("no log line for a member refused for the batch's size, with subject, method and outcome:\n%.2000s", l)
	}
}
