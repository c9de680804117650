package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// heldDownstream answers each message after its method, in every way a
// batch member's answer can end: whole, cut half-way, empty, in plain
// text, as an event stream with or without a response, as a redirect,
// and, for a notification, accepted with or without a body.
func heldDownstream(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &msg)
	resp := func(result string) string {
		return `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":` + result + `}`
	}
	switch msg.Method {
	case "a/ok":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, resp(`{"text":"`+strings.Repeat("o", 2<<10)+`"}`))
	case "a/cut":
		// Shorter than its Content-Length: the read fails half-way.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		io.WriteString(w, resp(`{"text":"`+strings.Repeat("c", 64<<10)))
	case "a/empty":
		w.WriteHeader(http.StatusOK)
	case "a/text500":
		http.Error(w, strings.Repeat("boom ", 1<<10), http.StatusInternalServerError)
	case "a/sse", "a/ssenone":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		if msg.Method == "a/sse" {
			io.WriteString(w, "event: message\ndata: "+resp(`{"text":"`+strings.Repeat("s", 4<<10)+`"}`)+"\n\n")
		}
	case "a/redirect":
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	case "notifications/junk":
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, strings.Repeat("accepted ", 100))
	case "tools/list":
		if string(msg.ID) == `"bad"` {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, resp(`{"tools":[{"name":"get_customer_record"}]`)) // cut: not JSON
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, resp(`{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}`))
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestReview19bBatchHeldAccounting runs a batch of 256 members, 16 at a
// time as serveBatch runs them, whose answers end in every way an answer
// can (read whole, cut half-way, empty, plain text, an event stream with
// and without a response, a redirect, a filtered tools/list that is not
// JSON, notifications accepted with and without a body), and checks the
// batch's count of the bytes it holds (batchOut.held) once every member
// has run: as a JSON array, it equals the bytes still charged to the
// members whose answers are kept (a failed member keeps none); as an
// event stream (the client accepts one, and some member answers with
// one, racing the others), it is zero, every answer having been written.
// A charge left behind would refuse later members of a large batch for
// bytes no longer held.
func TestReview19bBatchHeldAccounting(t *testing.T) {
	down := newServer(t, http.HandlerFunc(heldDownstream))
	g, err := New(down.URL+"/mcp", DemoTokens(), &Options{Logger: discardLogger(), FilterToolsList: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	shapes := []string{
		`{"jsonrpc":"2.0","id":%d,"method":"a/ok"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"a/cut"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"a/empty"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"a/text500"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"a/sse"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"a/ssenone"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"a/redirect"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"bad","method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/junk"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"admin_reset_key"}}`, // refused here
	}
	for _, tc := range []struct {
		name   string
		accept string
		stream bool
	}{
		{"json_array", "application/json", false},
		{"event_stream", "application/json, text/event-stream", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body strings.Builder
			body.WriteString("[")
			for i := range maxBatchMembers {
				if i > 0 {
					body.WriteString(",")
				}
				body.WriteString(strings.ReplaceAll(shapes[i%len(shapes)], "%d", strconv.Itoa(i)))
			}
			body.WriteString("]")
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body.String()))
			r.Header.Set("Authorization", viewer)
			r.Header.Set("Accept", tc.accept)
			pr, aerr := g.authenticate(r)
			if aerr != nil {
				t.Fatal(aerr.message)
			}
			msgs, _, perr := parseBody([]byte(body.String()))
			if perr != nil {
				t.Fatal(perr.message)
			}
			start := time.Now()
			plans := make([]plan, len(msgs))
			for i := range msgs {
				plans[i] = g.planMessage(r, g.pol.Load(), pr, "cid", &msgs[i], true, start)
			}
			// As serveBatch runs the members.
			var members []*member
			for i := range plans {
				if plans[i].local == nil {
					members = append(members, &member{p: &plans[i], cid: "cid", ctx: r.Context()})
				}
			}
			rec := httptest.NewRecorder()
			b := &batchOut{g: g, w: rec, pr: pr, cid: "cid", lst: &listing{r: r, pr: pr, cid: "cid", start: start}, plans: plans, members: members,
				acceptSSE: acceptsSSE(r.Header), answers: make(map[*plan][][]byte, len(members))}
			b.runAll(r)

			if got := b.ew != nil; got != tc.stream {
				t.Fatalf("event stream %v, want %v", got, tc.stream)
			}
			var charged int64
			for _, m := range members {
				charged += m.held
				kept := 0
				for _, msg := range b.answers[m.p] {
					kept += len(msg)
				}
				switch {
				case m.held < 0:
					t.Errorf("member %s: held %d, below zero", m.p.m.raw, m.held)
				case m.held > 0 && int64(kept) > m.held:
					t.Errorf("member %s: %d bytes charged for %d bytes kept", m.p.m.raw, m.held, kept)
				case m.held == 0 && kept > 1<<10:
					// Only an error made here, or nothing, is not charged.
					t.Errorf("member %s: %d bytes kept uncharged", m.p.m.raw, kept)
				}
			}
			if got := b.held.Load(); got != charged {
				t.Errorf("batchOut.held = %d, but the members' charges sum to %d: %d bytes charged to no member", got, charged, got-charged)
			}
			if tc.stream {
				if got := b.held.Load(); got != 0 {
					t.Errorf("batchOut.held = %d after every answer was written to the stream, want 0", got)
				}
				return
			}
			b.writeJSON()
			cl, _ := strconv.Atoi(rec.Header().Get("Content-Length"))
			if cl != rec.Body.Len() {
				t.Errorf("Content-Length %d, %d bytes written", cl, rec.Body.Len())
			}
			var out []json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("the merged answer is not a JSON array: %v", err)
			}
		})
	}
}

// TestReview19bBatchContentLength: a batch's JSON answer, written piece by
// piece under a Content-Length of its own making, is read by an HTTP
// client to the last byte and no further, whatever the batch: one
// member, members forwarded and refused here, refused ones only, and
// notifications only (202, or 204 when none was forwarded, without a
// body).
func TestReview19bBatchContentLength(t *testing.T) {
	rg := newRig(t, nil)
	note := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	refusedNote := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"admin_reset_key"}}`
	for _, tc := range []struct {
		name    string
		body    string
		status  int
		answers int
	}{
		{"one_member", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, http.StatusOK, 1},
		{"forwarded_and_refused", "[" + call("1", "get_customer_record", "") + "," + call("2", "admin_reset_key", "") + "," + note + ",5," +
			`{"jsonrpc":"2.0","id":"l","method":"tools/list"}` + "]", http.StatusOK, 4},
		{"refused_only", "[" + call("1", "admin_reset_key", "") + ",5]", http.StatusOK, 2},
		{"notifications_only", "[" + note + "," + note + "]", http.StatusAccepted, 0},
		{"refused_notifications_only", "[" + refusedNote + "]", http.StatusNoContent, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, rg.url+"/mcp", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", viewer)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the answer (Content-Length %d, %d bytes read): %v", resp.ContentLength, len(body), err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.answers == 0 {
				if len(body) != 0 || resp.ContentLength > 0 {
					t.Errorf("Content-Length %d, body %q; want none", resp.ContentLength, body)
				}
				return
			}
			if resp.ContentLength != int64(len(body)) {
				t.Errorf("Content-Length %d, %d bytes read", resp.ContentLength, len(body))
			}
			var out []json.RawMessage
			if err := json.Unmarshal(body, &out); err != nil || len(out) != tc.answers {
				t.Errorf("answer %s: %d messages (%v), want a JSON array of %d", body, len(out), err, tc.answers)
			}
		})
	}
}
