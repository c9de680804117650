package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// review37Tools returns a tools array of n tools named prefix_0 and on.
func review37Tools(prefix string, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"%s_%d"}`, prefix, i)
	}
	b.WriteByte(']')
	return b.String()
}

// TestReview37BatchWithheldSummary pins the summary record of a batch's
// listings: with Pins, a tools/list member whose answer withholds more
// unpinned tools than are recorded one by one gets one more record
// counting the rest, as a single tools/list does. Without it, an operator
// reading the audit trail of a batch would miss every tool past the cap.
func TestReview37BatchWithheldSummary(t *testing.T) {
	const n = maxWithheldRecords + 36
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse_%v", sse), func(t *testing.T) {
			pins, err := ParsePins([]byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			url, _ := r28Gateway(t, &Options{Pins: pins, Audit: sink}, func(w http.ResponseWriter, r *http.Request, body string) {
				msg := `{"jsonrpc":"2.0","id":1,"result":{"tools":` + review37Tools("tool", n) + `}}`
				if sse {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "event: message\ndata: "+msg+"\n\n")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, msg)
			})
			batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},` + call(`2`, "admin_reset_key", "") + `]`
			got := r28Post(t, url, batch, sse)
			if got.status != http.StatusOK || strings.Contains(got.body, "tool_") {
				t.Fatalf("POST %s: %d %.300s, want 200 and no unpinned tool", batch, got.status, got.body)
			}
			var summaries []string
			for _, e := range sink.since(0) {
				if strings.Contains(e.Detail, "more tools withheld") {
					summaries = append(summaries, e.Code+" "+e.Detail)
				}
			}
			want := []string{"TOOL_NOT_PINNED 36 more tools withheld, not recorded one by one (tool_not_pinned)"}
			if diff := cmp.Diff(want, summaries); diff != "" {
				t.Errorf("POST %s: summary records (-want +got):\n%s", batch, diff)
			}
		})
	}
}

// TestReview37FilteredListOutlivesItsClient pins that a single filtered
// tools/list, like any POST, is read to its end when its client's context
// ends while the downstream works on it: the call is not torn down with
// its client (only a subscriptions/listen's is), so the downstream's work
// is not cut off half way and the gateway still writes the filtered answer
// (which a middleware in front of it, recording the response, sees).
func TestReview37FilteredListOutlivesItsClient(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	dsrv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		close(arrived)
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`)
	}))
	g, err := New(dsrv.URL+"/mcp", DemoTokens(), &Options{FilterToolsList: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", viewer)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.ServeHTTP(rec, req)
	}()
	<-arrived
	cancel()
	close(release)
	<-done
	want := `{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"get_customer_record"}],"cacheScope":"private"}}`
	if got := rec.Body.String(); rec.Code != http.StatusOK || got != want {
		t.Errorf("POST %s, client gone while downstream: %d %q, want 200 %q", body, rec.Code, got, want)
	}
}

// TestReview37FilteredListGoneClientAnsweredNothing pins that a filtered
// tools/list whose client went away before it was sent is answered
// nothing (and not sent), as the package doc says of a client gone: an
// error written there would reach only a middleware, which would record
// an answer no client read. A deadline that passed is answered instead
// (TestReview23hFilteredListDeadlineIsAnswered).
func TestReview37FilteredListGoneClientAnsweredNothing(t *testing.T) {
	d := &downstream{}
	g, err := New(newServer(t, d).URL+"/mcp", DemoTokens(), &Options{FilterToolsList: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", viewer)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
		t.Errorf("POST %s, client gone: header %v body %q, want nothing written", body, rec.Header(), rec.Body)
	}
	if b := d.bodies(); len(b) != 0 {
		t.Errorf("POST %s, client gone: sent downstream %q, want nothing", body, b)
	}
}

// TestReview37FilteredListEncodedAnswer pins which answers to a single
// filtered tools/list the gateway refuses for a content coding it does not
// read: any 2xx (200 to 299), even when its bytes look like a listing, for
// its client would decode them into another listing than the one filtered;
// an error answer (404) is relayed as it is, for it has no tools to hide
// and its client needs to see it (an ended session).
func TestReview37FilteredListEncodedAnswer(t *testing.T) {
	const listing = `{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		wantStatus int
		wantBody   string // "" for a -32003 error answering id 5
	}{
		{name: "status_200", status: 200, body: listing, wantStatus: http.StatusBadGateway},
		{name: "status_299", status: 299, body: listing, wantStatus: http.StatusBadGateway},
		{name: "status_404", status: 404, body: "session not found", wantStatus: 404, wantBody: "session not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, logs := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "x-review37")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			const body = `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`
			got := r28Post(t, url, body, true)
			refusal := `msg="upstream answer refused: encoded, or not UTF-8"`
			if n, want := strings.Count(logs.String(), refusal), tc.status != 404; (n == 1) != want || n > 1 {
				t.Errorf("POST %s: %d log lines %s, want %v; log:\n%s", body, n, refusal, want, logs)
			}
			if tc.wantBody != "" {
				if got.status != tc.wantStatus || got.body != tc.wantBody {
					t.Errorf("POST %s: %d %q, want %d %q", body, got.status, got.body, tc.wantStatus, tc.wantBody)
				}
				return
			}
			if id, code, _ := rpcErr(t, got.body); got.status != tc.wantStatus || string(id) != "5" || code != -32003 {
				t.Errorf("POST %s: %d %s, want %d and a -32003 error answering id 5", body, got.status, got.body, tc.wantStatus)
			}
		})
	}
}

// TestReview37BatchEncodedAnswerUnfiltered pins that a batch member's
// answer is refused for its content coding only when the gateway must
// read it (FilterToolsList on a tools/list, or Pins): without either, a
// tools/call member whose downstream names a coding the gateway does not
// know is answered with what the downstream sent, as a single call is
// relayed, not refused -32003.
func TestReview37BatchEncodedAnswerUnfiltered(t *testing.T) {
	url, _ := r28Gateway(t, nil, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "x-review37")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`)
	})
	batch := `[` + call(`1`, "get_customer_record", "") + `,` + call(`2`, "admin_reset_key", "") + `]`
	got := r28Post(t, url, batch, false)
	ids, codes := batchAnswers(t, got.body)
	if diff := cmp.Diff([]string{"1", "2"}, ids); diff != "" {
		t.Errorf("POST %s: answer ids (-want +got):\n%s", batch, diff)
	}
	if diff := cmp.Diff([]int{0, CodeForbidden}, codes); diff != "" {
		t.Errorf("POST %s: answer codes (-want +got):\n%s\nbody %s", batch, diff, got.body)
	}
	// The merged answer is the gateway's own JSON: not in the coding the
	// member's answer named.
	if ce, ct := got.header.Get("Content-Encoding"), got.header.Get("Content-Type"); ce != "" || ct != "application/json" {
		t.Errorf("POST %s: Content-Encoding %q Content-Type %q, want none and application/json", batch, ce, ct)
	}
}

// TestReview37BatchFilteredListEncodedAnswer pins, for a batch's filtered
// tools/list member, the refusal of an answer in a content coding the
// gateway does not read: any 2xx (200 to 299) is answered -32003 even when
// its bytes look like a listing (its client would decode other ones), and
// an error answer (404) is the member's answer all the same, as the
// downstream wrote it, but for the member's id.
func TestReview37BatchFilteredListEncodedAnswer(t *testing.T) {
	const listing = `{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		wantCode int
	}{
		{name: "status_200", status: 200, body: listing, wantCode: -32003},
		{name: "status_299", status: 299, body: listing, wantCode: -32003},
		{name: "status_404", status: 404, body: `{"jsonrpc":"2.0","id":5,"error":{"code":-32001,"message":"Session not found"}}`, wantCode: -32001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, logs := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "x-review37")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			batch := `[{"jsonrpc":"2.0","id":7,"method":"tools/list"},` + call(`2`, "admin_reset_key", "") + `]`
			got := r28Post(t, url, batch, false)
			refusal := `msg="upstream answer refused: encoded, or not UTF-8"`
			if n, want := strings.Count(logs.String(), refusal), tc.status != 404; (n == 1) != want || n > 1 {
				t.Errorf("POST %s: %d log lines %s, want %v; log:\n%s", batch, n, refusal, want, logs)
			}
			ids, codes := batchAnswers(t, got.body)
			if diff := cmp.Diff([]string{"7", "2"}, ids); diff != "" {
				t.Errorf("POST %s: answer ids (-want +got):\n%s", batch, diff)
			}
			if diff := cmp.Diff([]int{tc.wantCode, CodeForbidden}, codes); diff != "" {
				t.Errorf("POST %s: answer codes (-want +got):\n%s\nbody %s", batch, diff, got.body)
			}
		})
	}
}

// TestReview37StreamHeaderFlushed pins that the header of an event stream
// the gateway rewrites reaches the client at once, before any event: a
// single filtered tools/list's, and a merged batch's as soon as the first
// member's stream begins. A client waiting for the header (the go-sdk's
// Connect does, for its streams) is not held until the downstream sends
// its first event, which may be long in coming.
func TestReview37StreamHeaderFlushed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  *Options
		event string
		body  string
	}{
		{"filtered_list", &Options{FilterToolsList: true},
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}\n\n",
			`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`},
		{"batch", nil,
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
			`[` + call(`1`, "get_customer_record", "") + `]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			url, _ := r28Gateway(t, tc.opts, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				<-release
				io.WriteString(w, tc.event)
			})
			defer close(release)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", viewer)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST %s: %v, want the stream's header before its first event", tc.body, err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
				t.Errorf("POST %s: %d %q, want 200 text/event-stream", tc.body, resp.StatusCode, ct)
			}
		})
	}
}

// TestReview37FilteredListStreamWithoutIDs pins that a single filtered
// tools/list answered with an event stream is relayed without the
// downstream's id and retry fields: a client that resumed it (a GET with
// Last-Event-ID) would have the answer replayed past the filter that
// rewrote it here.
func TestReview37FilteredListStreamWithoutIDs(t *testing.T) {
	url, _ := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: s1-0\nretry: 10\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		io.WriteString(w, "id: s1-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[{\"name\":\"admin_reset_key\"}]}}\n\n")
	})
	const body = `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	got := r28Post(t, url, body, true)
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[],\"cacheScope\":\"private\"}}\n\n"
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("POST %s: stream (-want +got):\n%s", body, diff)
	}
}

// TestReview37FilteredListLogged pins the "upstream" log line of a single
// filtered tools/list, JSON or event stream: it says the answer was
// filtered (and, for a stream, that it was one), the operator's only
// trace of a listing, which has no audit record.
func TestReview37FilteredListLogged(t *testing.T) {
	for _, tc := range []struct {
		name string
		ct   string
		body string
		want []string
	}{
		{name: "json", ct: "application/json", body: `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`,
			want: []string{"status=200", "filtered=true"}},
		{name: "sse", ct: "text/event-stream", body: "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}\n\n",
			want: []string{"status=200", "sse=true", "filtered=true", `err=""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, logs := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", tc.ct)
				io.WriteString(w, tc.body)
			})
			const body = `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
			if got := r28Post(t, url, body, true); got.status != http.StatusOK {
				t.Fatalf("POST %s: %d %s, want 200", body, got.status, got.body)
			}
			var line string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "msg=upstream ") {
					line = l
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(line, " "+w) {
					t.Errorf("POST %s: upstream log line %q lacks %q; log:\n%s", body, line, w, logs)
				}
			}
		})
	}
}

// TestReview37BatchEncodedAnswerReleased pins that a batch member's answer
// refused for its content coding is closed at once: the downstream's
// request ends (its connection is not held until the gateway's timeout),
// so a downstream that keeps streaming a refused answer does not keep a
// connection and its work going for nobody.
func TestReview37BatchEncodedAnswerReleased(t *testing.T) {
	gone := make(chan struct{})
	url, _ := r28Gateway(t, &Options{FilterToolsList: true, Timeout: 15 * time.Second}, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "x-review37")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	batch := `[{"jsonrpc":"2.0","id":7,"method":"tools/list"},` + call(`2`, "admin_reset_key", "") + `]`
	got := r28Post(t, url, batch, false)
	if _, codes := batchAnswers(t, got.body); !cmp.Equal([]int{-32003, CodeForbidden}, codes) {
		t.Fatalf("POST %s: answer codes %v, want [-32003 %d]; body %s", batch, codes, CodeForbidden, got.body)
	}
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	select {
	case <-gone:
	case <-guard.C:
		t.Errorf("POST %s: the refused member's downstream request still open 10 s after the answer", batch)
	}
}

// TestReview37BatchAnswerHeaders pins the header of a merged batch answer,
// JSON or event stream: the downstream's own headers (its Mcp-Session-Id,
// which a client keeps for its next requests) are copied from the first
// member in the client's order that was answered, and a merged stream is
// marked as not to be cached or transformed by a proxy between.
func TestReview37BatchAnswerHeaders(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ct          string
		body        string
		sse         bool
		wantType    string
		wantCaching string
	}{
		{name: "json", ct: "application/json", body: `{"jsonrpc":"2.0","id":1,"result":{}}`, wantType: "application/json"},
		{name: "sse", ct: "text/event-stream", body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", sse: true,
			wantType: "text/event-stream", wantCaching: "no-cache, no-transform"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := r28Gateway(t, nil, func(w http.ResponseWriter, r *http.Request, body string) {
				w.Header().Set("Mcp-Session-Id", "sess-review37")
				w.Header().Set("X-Review37", "kept")
				w.Header().Set("Content-Type", tc.ct)
				io.WriteString(w, tc.body)
			})
			batch := `[` + call(`2`, "admin_reset_key", "") + `,` + call(`1`, "get_customer_record", "") + `]`
			got := r28Post(t, url, batch, tc.sse)
			if got.status != http.StatusOK {
				t.Fatalf("POST %s: %d %s, want 200", batch, got.status, got.body)
			}
			gotH := map[string]string{}
			for _, k := range []string{"Mcp-Session-Id", "X-Review37", "Content-Type", "Cache-Control"} {
				gotH[k] = got.header.Get(k)
			}
			want := map[string]string{"Mcp-Session-Id": "sess-review37", "X-Review37": "kept", "Content-Type": tc.wantType,
				"Cache-Control": tc.wantCaching}
			if diff := cmp.Diff(want, gotH); diff != "" {
				t.Errorf("POST %s: headers (-want +got):\n%s", batch, diff)
			}
		})
	}
}

// review37JSONClosed is a Transport that closes closed once the body of
// the first JSON answer it returned has been closed: the gateway closes a
// batch member's answer once it has read and held it.
type review37JSONClosed struct {
	once   sync.Once
	closed chan struct{}
}

func (t *review37JSONClosed) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.Header.Get("Content-Type") == "application/json" {
		resp.Body = &review37OnClose{ReadCloser: resp.Body, f: func() { t.once.Do(func() { close(t.closed) }) }}
	}
	return resp, err
}

// review37OnClose calls f after its Close.
type review37OnClose struct {
	io.ReadCloser
	f func()
}

func (b *review37OnClose) Close() error {
	err := b.ReadCloser.Close()
	b.f()
	return err
}

// TestReview37BatchHeldAnswerFinished pins that a batch member whose JSON
// answer was read before another member's stream began, and so is written
// when the merged stream starts, has its call finished then: one outcome
// record each, so that the audit trail (and the in-flight place the call
// held) does not depend on which member's downstream answered first.
func TestReview37BatchHeldAnswerFinished(t *testing.T) {
	sink := &memSink{}
	tr := &review37JSONClosed{closed: make(chan struct{})}
	url, _ := r28Gateway(t, &Options{Audit: sink, Transport: tr}, func(w http.ResponseWriter, r *http.Request, body string) {
		if strings.Contains(body, "get_customer_record") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			return
		}
		<-tr.closed // the other member's answer is read and held first
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n")
	})
	batch := `[` + call(`1`, "get_customer_record", "") + `,` + call(`2`, "search_docs", "") + `]`
	got := r28Post(t, url, batch, true)
	if ct := got.header.Get("Content-Type"); got.status != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("POST %s: %d %q %s, want 200 and an event stream", batch, got.status, ct, got.body)
	}
	for _, tool := range []string{"get_customer_record", "search_docs"} {
		if evs := sink.outcomes(tool); len(evs) != 1 || !evs[0].Allowed {
			t.Errorf("POST %s: outcome records of %s: %+v, want one, allowed", batch, tool, evs)
		}
	}
}

// TestReview37BatchStreamRelaysWithoutIDs pins how a member's event stream
// is relayed into a merged batch stream: events without data (a comment
// that keeps a proxy from closing an idle stream) are relayed, and no
// event keeps its id or retry field, neither the downstream's requests and
// notifications nor events without data, for the merged stream mixes
// several downstream streams and cannot be resumed from any one's id.
func TestReview37BatchStreamRelaysWithoutIDs(t *testing.T) {
	const progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
	url, _ := r28Gateway(t, nil, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": ping\n\n")
		io.WriteString(w, "id: 7\nretry: 100\n\n")
		io.WriteString(w, "id: 8\nevent: message\ndata: "+progress+"\n\n")
		io.WriteString(w, "id: 9\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	})
	batch := `[` + call(`1`, "get_customer_record", "") + `]`
	got := r28Post(t, url, batch, true)
	want := ": ping\n\n" + "\n" + "event: message\ndata: " + progress + "\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("POST %s: merged stream (-want +got):\n%s", batch, diff)
	}
}

// TestReview37ReadEventsShapes pins how readEvents reads a downstream's
// event stream, as a conforming client does: a byte order mark is dropped
// only at the very start of the stream (at the start of a later line it
// is part of the field's name, so "\ufeffdata: x" is no data field and
// must not become a message the gateway checks or relays as data); a line
// with a CR other than its ending, even as its first byte, is refused
// (errBareCR), for a client would split it where readEvents does not;
// blank lines with no event pending dispatch nothing.
func TestReview37ReadEventsShapes(t *testing.T) {
	type ev struct {
		Data    string
		HasData bool
	}
	for _, tc := range []struct {
		name    string
		in      string
		want    []ev
		wantErr error
	}{
		{name: "leading_bom", in: "\ufeffdata: a\n\n", want: []ev{{"a", true}}},
		{name: "bom_later_line", in: "data: a\n\n\ufeffdata: b\n\n", want: []ev{{"a", true}, {"", false}}},
		{name: "bom_second_line_of_event", in: "event: message\n\ufeffdata: b\n\n", want: []ev{{"", false}}},
		{name: "data_without_colon", in: "data\n\n", want: []ev{{"", true}}},
		{name: "other_field_prefixed_data", in: "datax: a\n\n", want: []ev{{"", false}}},
		{name: "blank_lines_between", in: "data: a\n\n\n\ndata: b\n\n\n", want: []ev{{"a", true}, {"b", true}}},
		{name: "cr_first_byte", in: "\rdata: a\n\n", wantErr: errBareCR},
		{name: "cr_inside", in: "data: a\rdata: b\n\n", wantErr: errBareCR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []ev
			err := readEvents(strings.NewReader(tc.in), func(e *event) { got = append(got, ev{string(e.data), e.hasData}) })
			if err != tc.wantErr {
				t.Fatalf("readEvents(%q) = %v, want %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readEvents(%q): events (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestReview37FilteredListArrayAnswer pins the filtering of a single
// tools/list answered with a JSON array of messages (which the TypeScript
// client accepts): every element is filtered and the array kept whole and
// in order, elements that are no result kept as they are; an element the
// filter cannot read (a result naming its tools twice) refuses the whole
// answer, -32003, rather than relay part of it unfiltered. A 2xx answer
// that is not JSON at all is refused too (299 as 200).
func TestReview37FilteredListArrayAnswer(t *testing.T) {
	const (
		full = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
		kept = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"}],"cacheScope":"private"}}`
	)
	for _, tc := range []struct {
		name   string
		status int
		answer string
		want   string // "" for a -32003 error answering id 1, with 502
	}{
		{name: "two_listings", status: 200, answer: `[` + full + `,` + full + `]`, want: `[` + kept + `,` + kept + `]`},
		{name: "short_element_first", status: 200, answer: `[7,` + full + `]`, want: `[7,` + kept + `]`},
		{name: "empty", status: 200, answer: `[]`, want: `[]`},
		{name: "ambiguous_element", status: 200, answer: `[` + full + `,{"jsonrpc":"2.0","id":1,"result":{"tools":[],"Tools":[]}}]`},
		{name: "not_json_299", status: 299, answer: `not json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.answer)
			})
			const body = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			got := r28Post(t, url, body, false)
			if tc.want != "" {
				if got.status != tc.status || got.body != tc.want {
					t.Errorf("POST %s answered %s: %d %s, want %d %s", body, tc.answer, got.status, got.body, tc.status, tc.want)
				}
				return
			}
			if id, code, _ := rpcErr(t, got.body); got.status != http.StatusBadGateway || string(id) != "1" || code != -32003 {
				t.Errorf("POST %s answered %s: %d %s, want 502 and a -32003 error answering id 1", body, tc.answer, got.status, got.body)
			}
		})
	}
}

// TestReview37BatchStreamMemberEnds pins how a member relayed from its
// event stream is finished when the stream ends: a tools/call notification
// member (no answer expected) whose stream ended cleanly is a success in
// its outcome record; a request member whose stream was cut (inside a
// line, or its connection closed inside a chunk) is answered "Upstream
// unavailable", not "timed out", and its record says the downstream cut
// the answer, not that it closed before answering; the log line says it
// was no timeout.
func TestReview37BatchStreamMemberEnds(t *testing.T) {
	const progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
	for _, tc := range []struct {
		name       string
		batch      string
		tool       string
		answer     func(w http.ResponseWriter)
		wantAnswer string // the error message answering id 1; "" for none
		wantCode   string // the outcome record's code
		wantDetail string // in the outcome record's detail
	}{
		{
			name:  "notification_clean_end",
			batch: `[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search_docs","arguments":{}}}]`,
			tool:  "search_docs",
			answer: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: "+progress+"\n\n")
			},
		},
		{
			name:  "request_cut_in_line",
			batch: `[` + call(`1`, "get_customer_record", "") + `]`,
			tool:  "get_customer_record",
			answer: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: "+progress+"\n\ndata: {\"jsonrpc\"")
			},
			wantAnswer: "Upstream unavailable", wantCode: "UPSTREAM_UNAVAILABLE",
			wantDetail: "downstream closed the connection before the answer's end",
		},
		{
			name:  "request_cut_in_chunk",
			batch: `[` + call(`1`, "get_customer_record", "") + `]`,
			tool:  "get_customer_record",
			answer: func(w http.ResponseWriter) {
				c, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				defer c.Close()
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
					fmt.Sprintf("%x\r\n", len(progress)+8)+"data: "+progress+"\n\n\r\n"+"40\r\ndata: {")
			},
			wantAnswer: "Upstream unavailable", wantCode: "UPSTREAM_UNAVAILABLE",
			wantDetail: "downstream closed the connection before the answer's end",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			url, logs := r28Gateway(t, &Options{Audit: sink}, func(w http.ResponseWriter, r *http.Request, _ string) { tc.answer(w) })
			got := r28Post(t, url, tc.batch, true)
			// A relayed stream's bytes are not counted (-1); a cut is no timeout.
			var logged []string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, `msg="upstream error"`) {
					logged = append(logged, fmt.Sprint(strings.Contains(l, " bytes=-1 "), strings.Contains(l, " timeout=false ")))
				}
			}
			var wantLogged []string
			if tc.wantAnswer != "" {
				wantLogged = []string{"true true"}
			}
			if diff := cmp.Diff(wantLogged, logged); diff != "" {
				t.Errorf("POST %s: upstream error lines with bytes=-1, timeout=false (-want +got):\n%s\nlog:\n%s", tc.batch, diff, logs)
			}
			var answers []string
			for _, m := range r28Messages(t, got) {
				if _, ok := m["method"]; ok {
					continue
				}
				var e struct {
					Error struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				b, _ := json.Marshal(m)
				json.Unmarshal(b, &e)
				answers = append(answers, string(m["id"])+" "+e.Error.Message)
			}
			var want []string
			if tc.wantAnswer != "" {
				want = []string{"1 " + tc.wantAnswer}
			}
			if diff := cmp.Diff(want, answers); diff != "" {
				t.Errorf("POST %s: answers (-want +got):\n%s\nbody %s", tc.batch, diff, got.body)
			}
			evs := sink.outcomes(tc.tool)
			if len(evs) != 1 {
				t.Fatalf("POST %s: %d outcome records of %s, want 1: %+v", tc.batch, len(evs), tc.tool, evs)
			}
			if e := evs[0]; e.Allowed != (tc.wantCode == "") || e.Code != tc.wantCode || !strings.Contains(e.Detail, tc.wantDetail) {
				t.Errorf("POST %s: outcome allowed %v code %q detail %q, want allowed %v code %q detail with %q",
					tc.batch, e.Allowed, e.Code, e.Detail, tc.wantCode == "", tc.wantCode, tc.wantDetail)
			}
		})
	}
}
