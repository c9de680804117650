package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
)

// TestReview38LimiterDeadlinePassedIsAnswered504 pins the answer the
// Limiter option's doc promises a tools/call whose deadline passed before
// its store-backed limiter decided: -32003 with HTTP 504
// (UPSTREAM_UNAVAILABLE), as a call its deadline left unsent, never the
// limiter's own refusal (a 503 or 429 would tell the client to blame or
// wait for the limiter). Both ways are covered: a deadline already passed
// when the call reaches the limiter, and one that passes while the store
// is deciding (the store returns the context's error, as a Redis client
// does). The call is recorded as refused with the client's leaving as
// its detail, and never reaches the downstream.
func TestReview38LimiterDeadlinePassedIsAnswered504(t *testing.T) {
	entered := make(chan struct{}, 1)
	store := limiter.StoreFunc(func(ctx context.Context, _ time.Time, b *limiter.Batch) error {
		entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	lim, err := limiter.New([]limiter.Limit{{Kind: limiter.Rate, Scope: limiter.User, Max: 100, Window: time.Hour}},
		&limiter.Options{Store: store, FailOpenReads: true, FailOpenWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	d := &downstream{}
	dsrv := httptest.NewServer(d)
	t.Cleanup(dsrv.Close)
	for _, tc := range []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		inStore bool
	}{
		{"passed_before", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		}, false},
		{"passes_in_store", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), Audit: sink, Limiter: lim})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := tc.ctx()
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(call(`7`, "get_customer_record", `{"id":"c1"}`)))
			req.Header.Set("Authorization", admin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, req)
			select {
			case <-entered:
				if !tc.inStore {
					t.Errorf("the store was asked about a call whose deadline had passed")
				}
			default:
				if tc.inStore {
					t.Fatalf("the store was never asked")
				}
			}
			var got struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer %d %q: %v", rec.Code, rec.Body.String(), err)
			}
			if rec.Code != http.StatusGatewayTimeout || got.Error.Code != CodeUpstreamUnavailable || string(got.ID) != "7" ||
				!strings.Contains(got.Error.Message, "deadline passed") {
				t.Errorf("answer %d %s; want 504, id 7, code %d, a message that the deadline passed", rec.Code, rec.Body.String(), CodeUpstreamUnavailable)
			}
			evs := sink.outcomes("get_customer_record")
			if len(evs) != 1 || evs[0].Allowed || evs[0].Detail != clientGoneUndecided {
				t.Errorf("outcome records %+v; want one, refused, detail %q", evs, clientGoneUndecided)
			}
			if b := d.bodies(); len(b) != 0 {
				t.Errorf("sent downstream: %q", b)
			}
		})
	}
}

// TestReview38BatchMembersWithoutMethodHeader pins that the members of a
// batch whose client sent no Mcp-Method are forwarded without one (and
// without Mcp-Name): memberHeaders rewrites the standard headers a client
// sent for the batch to each member's, and adds none the client did not
// send, so that the downstream sees only what the client's protocol
// version has.
func TestReview38BatchMembersWithoutMethodHeader(t *testing.T) {
	const app = "https://app.example.com"
	rg := newRig(t, &Options{AllowedOrigins: []string{app}})
	body := "[" + call(`1`, "get_customer_record", "") + `,{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
	got := rg.post(t, viewer, body, "Origin", app, "Sec-Fetch-Site", "cross-site")
	if got.status != http.StatusOK {
		t.Fatalf("the batch: %d %.300s", got.status, got.body)
	}
	log := rg.down.log()
	if len(log) != 2 {
		t.Fatalf("the downstream received %d requests, want the 2 members alone", len(log))
	}
	for _, r := range log {
		for _, k := range []string{"Mcp-Method", "Mcp-Name"} {
			if v := r.Header.Values(k); len(v) != 0 {
				t.Errorf("%s: the downstream got %s %q, which the client never sent", r.Body, k, v)
			}
		}
	}
}

// TestReview38BatchStreamDataLinesAsSent pins that a merged stream relays
// the data lines of an event it does not change as the downstream wrote
// them: without the space after "data:", and a message split over two
// data lines, byte for byte. Only an event whose data a filter changed is
// written anew.
func TestReview38BatchStreamDataLinesAsSent(t *testing.T) {
	const progress = "data:{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\n" +
		"data: \"params\":{\"progressToken\":1,\"progress\":1}}\n"
	url, _ := r28Gateway(t, nil, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\n"+progress+"\n")
		io.WriteString(w, "event: message\ndata:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	})
	batch := `[` + call(`1`, "get_customer_record", "") + `]`
	got := r28Post(t, url, batch, true)
	want := "event: message\n" + progress + "\n" + "event: message\ndata:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("POST %s: merged stream (-want +got):\n%s", batch, diff)
	}
}
