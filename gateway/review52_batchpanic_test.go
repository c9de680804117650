package gateway

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// panickyHandler is a slog.Handler that panics on the lines whose message
// is msg: an operator's buggy log handler.
type panickyHandler struct {
	msg    string
	panics *atomic.Int32
}

func (panickyHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h panickyHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.panics.Add(1)
		panic("log handler broke on " + h.msg)
	}
	return nil
}

func (h panickyHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panickyHandler) WithGroup(string) slog.Handler      { return h }

// TestReview52BatchMemberPanicKeepsProcess: a panic on the goroutine that
// forwards a batch member (here the operator's log handler, breaking on
// the line of the member's failed upstream call) is the request's panic,
// as one in a single call's handler is: net/http breaks that request's
// connection and the gateway serves on. Unrecovered on the member's own
// goroutine, it ended the process.
func TestReview52BatchMemberPanicKeepsProcess(t *testing.T) {
	var panics atomic.Int32
	g, err := New("http://127.0.0.1:1/mcp", DemoTokens(), &Options{Logger: slog.New(panickyHandler{"upstream error", &panics})})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var errs bytes.Buffer // the server's "http: panic serving" lines
	srv := httptest.NewUnstartedServer(g)
	srv.Config.ErrorLog = log.New(lockedWriter{&mu, &errs}, "", 0)
	srv.Start()
	defer srv.Close()
	post := func(body string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return srv.Client().Do(req)
	}
	batch := `[` + call("1", "get_customer_record", `{"customer_id":"C1"}`) + `,` + call("2", "get_customer_record", `{"customer_id":"C2"}`) + `]`
	for _, body := range []string{batch, call("3", "get_customer_record", `{"customer_id":"C3"}`)} {
		resp, err := post(body)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("a request whose handling panicked was answered: %d %s", resp.StatusCode, b)
		}
	}
	if n := panics.Load(); n != 3 {
		t.Errorf("the log handler panicked %d times, want 3 (each member's line, then the single call's)", n)
	}
	// The server's log has the member's panic with the stack of the
	// member's goroutine where it began, and the single call's.
	mu.Lock()
	l := errs.String()
	mu.Unlock()
	if n := strings.Count(l, "log handler broke on upstream error (on a batch member's goroutine)"); n != 1 {
		t.Errorf("the server logged the member's panic %d times, want once; its log:\n%s", n, l)
	}
	if !strings.Contains(l, "(*batchOut).run(") || strings.Count(l, "http: panic serving") != 2 {
		t.Errorf("want two panics logged, the member's with its goroutine's stack (batchOut.run); the log:\n%s", l)
	}
	resp, err := srv.Client().Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatalf("the gateway no longer serves: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz after the panics: %d, want 200", resp.StatusCode)
	}
}
