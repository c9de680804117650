package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pinnedAnswerRig is a gateway with trust-on-first-use Pins in front of a
// downstream that answers its first request (a tools/list) with goodTool
// and every later one with answer, as JSON or, with sse, as one event.
func pinnedAnswerRig(t *testing.T, answer string, sse bool) *rig {
	t.Helper()
	var n atomic.Int64
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if n.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[`+goodTool+`]}}`)
			return
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Pins: TrustOnFirstUse(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{url: newServer(t, g).URL}
	if r := rg.post(t, admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); r.status != http.StatusOK || !strings.Contains(r.body, "Look up a customer.") {
		t.Fatalf("the first listing: %d %s", r.status, r.body)
	}
	return rg
}

// TestReview50GuardedAnswerOtherSpelling: with Pins, the answer to a
// tools/call that carries a listing under another spelling of "result"
// ("Result", which encoding/json clients match) does not reach the client
// as it is, as JSON (a 502) or as an event (dropped): the gateway cannot
// tell which result such a client reads, so it fails closed.
func TestReview50GuardedAnswerOtherSpelling(t *testing.T) {
	answer := `{"jsonrpc":"2.0","id":2,"Result":{"tools":[` + poisonedTool + `]}}`
	for _, sse := range []bool{false, true} {
		rg := pinnedAnswerRig(t, answer, sse)
		r := rg.post(t, admin, call("2", "get_customer_record", `{"customer_id":"CUST-00001"}`))
		if strings.Contains(r.body, "id_rsa") {
			t.Errorf("sse %v: the changed definition reached the client: %d %s", sse, r.status, r.body)
		}
		// As JSON, a 502 for the call; as an event, the event dropped.
		if want := map[bool]int{false: http.StatusBadGateway, true: http.StatusOK}[sse]; r.status != want {
			t.Errorf("sse %v: status %d %s, want %d", sse, r.status, r.body, want)
		}
	}
}

// TestReview50GuardedAnswerUntouched: with Pins, an answer that carries no
// listing is relayed byte for byte, as JSON, as an array of messages and
// as an event: its white space kept, and a cacheScope in its result left
// as the downstream gave it (only a listing's is made private).
func TestReview50GuardedAnswerUntouched(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		sse          bool
	}{
		{"json", `{ "jsonrpc" : "2.0", "id" : 2, "result" : { "content" : [ ], "cacheScope" : "public" } }`, false},
		{"array", `[ { "jsonrpc" : "2.0", "id" : 2, "result" : { "content" : [ ], "cacheScope" : "public" } } ]`, false},
		{"event", `{ "jsonrpc" : "2.0", "id" : 2, "result" : { "content" : [ ], "cacheScope" : "public" } }`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := pinnedAnswerRig(t, tc.answer, tc.sse)
			r := rg.post(t, admin, call("2", "get_customer_record", `{"customer_id":"CUST-00001"}`))
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got := r.body
			if tc.sse {
				got = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(got), "event: message\ndata: "))
			}
			if got != tc.answer {
				t.Errorf("relayed %q, want %q byte for byte", got, tc.answer)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not JSON: %q", got)
			}
		})
	}
}

// TestReview50PinnedCallUnreadableAnswer: with Pins, the answer to a
// tools/call that the gateway must read but cannot (compressed, or an
// event stream in another charset than UTF-8) is answered with a 502
// carrying -32003 for the call's id, logged once, and recorded as the
// call's outcome with its cause.
func TestReview50PinnedCallUnreadableAnswer(t *testing.T) {
	for _, tc := range []struct{ name, header, value string }{
		{"gzip", "Content-Encoding", "gzip"},
		{"utf7_events", "Content-Type", "text/event-stream; charset=utf-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			url, logs := r28Gateway(t, &Options{Pins: TrustOnFirstUse(), Audit: sink}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set(tc.header, tc.value)
				io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
			})
			got := r28Post(t, url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`), false)
			if id, code, _ := rpcErr(t, got.body); got.status != http.StatusBadGateway || string(id) != "7" || code != -32003 {
				t.Errorf("%d %s, want 502 and a -32003 error answering id 7", got.status, got.body)
			}
			if evs, want := r50Outcomes(sink), "UPSTREAM_UNAVAILABLE: downstream's answer was encoded, or not UTF-8"; len(evs) != 1 || evs[0] != want {
				t.Errorf("outcome records %q, want one %q", evs, want)
			}
			if n := strings.Count(logs.String(), `msg="upstream answer refused: encoded, or not UTF-8"`); n != 1 {
				t.Errorf("%d refusal log lines, want 1; log:\n%s", n, logs)
			}
		})
	}
}

// TestReview50PinnedNotificationAnswer: with Pins, the answer to a
// tools/call sent as a notification (no id), which no client reads, is
// relayed with its status and header but without its body or the type of
// that body, logged as checked with the body dropped, and the call's
// outcome is recorded.
func TestReview50PinnedNotificationAnswer(t *testing.T) {
	sink := &memSink{}
	url, logs := r28Gateway(t, &Options{Pins: TrustOnFirstUse(), Audit: sink}, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Mcp-Session-Id", "s-1")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "Accepted")
	})
	got := r28Post(t, url, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`, false)
	if got.status != http.StatusAccepted || got.body != "" {
		t.Errorf("%d %q, want 202 without a body", got.status, got.body)
	}
	if s, ct := got.header.Get("Mcp-Session-Id"), got.header.Get("Content-Type"); s != "s-1" || ct != "" {
		t.Errorf("Mcp-Session-Id %q, Content-Type %q; want s-1 and none", s, ct)
	}
	if evs := r50Outcomes(sink); len(evs) != 1 || evs[0] != ": " {
		t.Errorf("outcome records %q, want one allowed, without a detail", evs)
	}
	if !logs.waitFor("msg=upstream ", "status=202 checked=true body_dropped=true") {
		t.Errorf("log, want an upstream line with status=202 checked=true body_dropped=true:\n%s", logs)
	}
}

// TestReview50PinnedEventsStatusAndLog: with Pins, an event stream
// answering a tools/call is relayed with the downstream's own 2xx status
// (here 201), not a 200 of the gateway's, and its "upstream" line says it
// was an event stream, checked.
func TestReview50PinnedEventsStatusAndLog(t *testing.T) {
	url, logs := r28Gateway(t, &Options{Pins: TrustOnFirstUse()}, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n")
	})
	got := r28Post(t, url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`), true)
	if got.status != http.StatusCreated || !strings.Contains(got.body, `"id":7,"result":{"content":[]}`) {
		t.Errorf("%d %q, want 201 and the event", got.status, got.body)
	}
	if !logs.waitFor("msg=upstream ", "status=201 sse=true checked=true") {
		t.Errorf("log, want an upstream line with status=201 sse=true checked=true:\n%s", logs)
	}
}

// TestReview50PinnedEventsKeepIDs: with Pins, the events of a stream
// answering a tools/call keep their id and retry fields: the stream may be
// resumed; and the answer ends cleanly.
func TestReview50PinnedEventsKeepIDs(t *testing.T) {
	url, _ := r28Gateway(t, &Options{Pins: TrustOnFirstUse()}, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: ev-5\nretry: 1500\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n")
	})
	got, err := r50Post(url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`))
	if err != nil || !strings.Contains(got, "id: ev-5\n") || !strings.Contains(got, "retry: 1500\n") {
		t.Errorf("%q, %v; want the event with its id and retry, and a clean end", got, err)
	}
}

// TestReview50PinnedEventsCut: with Pins, an event stream answering a
// tools/call that the downstream cuts between two events (no final chunk)
// is recorded UPSTREAM_UNAVAILABLE with the cause that it was cut before
// its end, not that it was never answered nor that it timed out; its
// client sees the answer cut, not a clean end.
func TestReview50PinnedEventsCut(t *testing.T) {
	sink := &memSink{}
	url, _ := r28Gateway(t, &Options{Pins: TrustOnFirstUse(), Audit: sink}, r50Raw(t, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
		chunk("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")))
	got, err := r50Post(url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`))
	if err == nil || !strings.Contains(got, "progress") {
		t.Errorf("the client read %q, error %v; want the first event, then the answer cut (an error)", got, err)
	}
	if evs, want := r50Outcomes(sink), "UPSTREAM_UNAVAILABLE: downstream closed the connection before the answer's end"; len(evs) != 1 || evs[0] != want {
		t.Errorf("outcome records %q, want one %q", evs, want)
	}
}

// r50Request is a POST of body to the gateway at url as the viewer,
// accepting an event stream, bound to ctx.
func r50Request(ctx context.Context, url, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", viewer)
	return req
}

// r50Post sends r50Request and returns the answer's body and the error
// reading it.
func r50Post(url, body string) (string, error) {
	resp, err := http.DefaultClient.Do(r50Request(context.Background(), url, body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// r50Outcomes waits up to 3 s for the outcome records of
// get_customer_record in sink, and returns them as "CODE: detail".
func r50Outcomes(sink *memSink) []string {
	var evs []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		evs = nil
		for _, e := range sink.outcomes("get_customer_record") {
			evs = append(evs, e.Code+": "+e.Detail)
		}
		if len(evs) > 0 || time.Now().After(deadline) {
			return evs
		}
	}
}

// TestReview50PinnedEventsClientGone: with Pins, a tools/call whose client
// leaves while its event stream goes on is recorded as such once the
// stream ends.
func TestReview50PinnedEventsClientGone(t *testing.T) {
	sink := &memSink{}
	url, _ := r28Gateway(t, &Options{Pins: TrustOnFirstUse(), Audit: sink}, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}\n\n")
	})
	resp, err := http.DefaultClient.Do(r50Request(context.Background(), url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`)))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatalf("the first event: %v", err)
	}
	resp.Body.Close() // the client leaves
	if evs := r50Outcomes(sink); len(evs) != 1 || evs[0] != ": "+clientGone {
		t.Errorf("outcome records %q, want one allowed saying %q", evs, clientGone)
	}
}

// TestReview50PinnedJSONHeaders: with Pins, a JSON answer to a tools/call,
// read whole to be checked, is relayed with the downstream's 2xx status
// (here 201) and header (its session id among them), and logged.
func TestReview50PinnedJSONHeaders(t *testing.T) {
	url, logs := r28Gateway(t, &Options{Pins: TrustOnFirstUse()}, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s-9")
		w.Header().Set("X-Review50", "kept")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	})
	got := r28Post(t, url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`), false)
	if got.status != http.StatusCreated || got.header.Get("Mcp-Session-Id") != "s-9" || got.header.Get("X-Review50") != "kept" ||
		got.header.Get("Content-Type") != "application/json" {
		t.Errorf("%d %v, want the downstream's 201 and header", got.status, got.header)
	}
	if !logs.waitFor("msg=upstream ", "status=201 bytes=48 checked=true") {
		t.Errorf("log, want an upstream line with status=201 bytes=48 checked=true:\n%s", logs)
	}
}

// TestReview50PinnedJSONCut: with Pins, a JSON answer to a tools/call that
// the downstream cuts short (fewer bytes than its Content-Length) is
// answered with a 502 carrying -32003 for the call's id, and the cut is
// logged with how much came.
func TestReview50PinnedJSONCut(t *testing.T) {
	sink := &memSink{}
	url, logs := r28Gateway(t, &Options{Pins: TrustOnFirstUse(), Audit: sink}, r50Raw(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\""))
	got := r28Post(t, url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`), false)
	if id, code, _ := rpcErr(t, got.body); got.status != http.StatusBadGateway || string(id) != "7" || code != -32003 {
		t.Errorf("%d %s, want 502 and a -32003 error answering id 7", got.status, got.body)
	}
	if evs, want := r50Outcomes(sink), "UPSTREAM_UNAVAILABLE: downstream closed the connection before the answer's end"; len(evs) != 1 || evs[0] != want {
		t.Errorf("outcome records %q, want one %q", evs, want)
	}
	if !logs.waitFor(`msg="upstream error"`, "status=200 bytes=16 timeout=false") {
		t.Errorf("log, want an upstream error line with status=200 bytes=16 timeout=false:\n%s", logs)
	}
}

// TestReview50PinnedJSONBodies: with Pins, a 2xx JSON answer to a
// tools/call is relayed with its length when it is JSON (a long one too,
// not chunked: a client sees a short answer as short), relayed empty when
// the downstream sent nothing, and refused (502, -32003) when it is not
// JSON, however short.
func TestReview50PinnedJSONBodies(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		status       int
	}{
		{"json", `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, http.StatusOK},
		{"large_json", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("z", 10000) + `"}]}}`, http.StatusOK},
		{"one_byte_json", `7`, http.StatusOK},
		{"empty", ``, http.StatusOK},
		{"blank", " \n", http.StatusOK},
		{"one_byte", `x`, http.StatusBadGateway},
		{"two_bytes", `xy`, http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, logs := r28Gateway(t, &Options{Pins: TrustOnFirstUse()}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer)
			})
			got := r28Post(t, url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`), false)
			if got.status != tc.status {
				t.Fatalf("%d %q, want %d", got.status, got.body, tc.status)
			}
			refused := `msg="upstream answer refused: not JSON, or larger than the limit"`
			if n, want := strings.Count(logs.String(), refused), tc.status != http.StatusOK; (n == 1) != want || n > 1 {
				t.Errorf("%d log lines %s, want %v; log:\n%s", n, refused, want, logs)
			}
			if tc.status != http.StatusOK {
				if id, code, _ := rpcErr(t, got.body); string(id) != "7" || code != -32003 {
					t.Errorf("%s, want a -32003 error answering id 7", got.body)
				}
				return
			}
			if got.body != tc.answer {
				t.Errorf("relayed %q, want %q", got.body, tc.answer)
			}
			if cl := got.header.Get("Content-Length"); cl != strconv.Itoa(len(tc.answer)) {
				t.Errorf("Content-Length %q, want %d", cl, len(tc.answer))
			}
		})
	}
}

// TestReview50PinnedJSONClientGone: with Pins, a tools/call whose client
// gave up before its JSON answer came is recorded as such: the call goes
// on downstream, its answer is read and checked, and relayed to no one.
func TestReview50PinnedJSONClientGone(t *testing.T) {
	sink := &memSink{}
	url, _ := r28Gateway(t, &Options{Pins: TrustOnFirstUse(), Audit: sink}, func(w http.ResponseWriter, r *http.Request, _ string) {
		time.Sleep(300 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if resp, err := http.DefaultClient.Do(r50Request(ctx, url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`))); err == nil {
		resp.Body.Close()
		t.Fatalf("the client got %d before it gave up", resp.StatusCode)
	}
	if evs := r50Outcomes(sink); len(evs) != 1 || evs[0] != ": "+clientGone {
		t.Errorf("outcome records %q, want one allowed saying %q", evs, clientGone)
	}
}

// TestReview50PinnedCallAnswerRecorded: with Pins, the outcome record of a
// tools/call tells what its answer said, the answer found as a client
// finds it: the message, or the first response in an array of them, whose
// id the client takes for the call's (7.0 for 7, not "7"); a later
// response says nothing of the call. An answer that holds no response to
// the call (one to another id, a notification, an empty body) is relayed
// as it came and recorded allowed, saying it had none.
func TestReview50PinnedCallAnswerRecorded(t *testing.T) {
	const (
		toolErr    = `{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}`
		rpcError   = `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"no"}}`
		note       = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
		ok         = `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
		noResponse = "downstream's answer had no JSON-RPC response"
	)
	for _, tc := range []struct{ name, answer, want string }{
		{"tool_error", toolErr, ": tool reported an error"},
		{"rpc_error", rpcError, ": downstream answered a JSON-RPC error"},
		{"array_first", "[" + toolErr + "," + note + "]", ": tool reported an error"},
		{"array_after_note", "[" + note + "," + rpcError + "]", ": downstream answered a JSON-RPC error"},
		{"array_after_scalar", `[1,{"jsonrpc":"2.0","id":7.0,"result":{"isError":true}}]`, ": tool reported an error"},
		{"array_first_response_wins", "[" + ok + "," + toolErr + "]", ": "},
		{"float_id", `{"jsonrpc":"2.0","id":7.0,"result":{"isError":true}}`, ": tool reported an error"},
		// No response to the call: relayed as it came, allowed, and told.
		{"string_id", `{"jsonrpc":"2.0","id":"7","result":{"isError":true}}`, ": " + noResponse},
		{"other_id", `{"jsonrpc":"2.0","id":8,"error":{"code":-32000,"message":"no"}}`, ": " + noResponse},
		{"notification", note, ": " + noResponse},
		{"array_of_notes", "[" + note + "," + note + "]", ": " + noResponse},
		{"empty", "", ": " + noResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{}
			url, _ := r28Gateway(t, &Options{Pins: TrustOnFirstUse(), Audit: sink}, func(w http.ResponseWriter, r *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.answer)
			})
			got := r28Post(t, url, call(`7`, "get_customer_record", `{"customer_id":"CUST-00001"}`), false)
			if got.status != http.StatusOK || got.body != tc.answer {
				t.Errorf("%d %q, want 200 and the answer as it came", got.status, got.body)
			}
			if evs := r50Outcomes(sink); len(evs) != 1 || evs[0] != tc.want {
				t.Errorf("outcome records %q, want one %q", evs, tc.want)
			}
		})
	}
}

// TestReview50SameID: the ids a client takes for one: the same text,
// strings with the same value however escaped, numbers with the same value
// however written (the first digit 0 to 9, or a sign); never a string and
// a number, nor two different values.
func TestReview50SameID(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`7`, `7`, true},
		{`null`, `null`, true},
		{`"7"`, `"\u0037"`, true},
		{`"a"`, `"b"`, false},
		{`"7"`, `7`, false},
		{`7`, `"7"`, false},
		{`7`, `7.0`, true},
		{`0`, `0.0`, true},
		{`9`, `9.0`, true},
		{`0.0`, `0`, true},
		{`-1`, `-1.0`, true},
		{`-1.0`, `-1`, true},
		{`1e2`, `100`, true},
		{`10`, `1`, false},
		{`7`, `8`, false},
		{`null`, `0`, false},
		{`0`, `null`, false},
		{`true`, `1`, false},
		{`"7"`, `7.0`, false},
		{`"`, `"`, true},
		{`"\u00"`, `"\u00"`, true},
		{`"\u00"`, `"\u01"`, false},
		{`""`, `"\u00"`, false}, // one unreadable: not the other's value
		{`"\u00"`, `""`, false},
		{`-`, `0`, false},
		{`0`, `-`, false},
	} {
		if got := sameID([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("sameID(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestReview50IsRedirect: every 3xx, and only those, is a redirection.
func TestReview50IsRedirect(t *testing.T) {
	for status, want := range map[int]bool{299: false, 300: true, 301: true, 308: true, 399: true, 400: false} {
		if got := isRedirect(status); got != want {
			t.Errorf("isRedirect(%d) = %v, want %v", status, got, want)
		}
	}
}

// r50Raw is a downstream's answer that writes raw, the bytes of an HTTP
// answer, on the connection and closes it.
func r50Raw(t *testing.T, raw string) func(w http.ResponseWriter, r *http.Request, body string) {
	return func(w http.ResponseWriter, r *http.Request, _ string) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.WriteString(c, raw)
	}
}
