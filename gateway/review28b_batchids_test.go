package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// r28bCheckWithID checks withID(msg, id) for a msg that classify takes for
// a response: the output is valid JSON, an object whose "id" is id byte for
// byte, and whose other members are msg's, byte for byte, in msg's order.
func r28bCheckWithID(t *testing.T, raw, id []byte) {
	t.Helper()
	kind, msg := classify(raw)
	if kind != kindResponse {
		return
	}
	out := withID(msg, id)
	if !json.Valid(out) {
		t.Fatalf("withID(%q, %s) = %q: not JSON", msg, id, out)
	}
	var before, after map[string]json.RawMessage
	if err := json.Unmarshal(msg, &before); err != nil {
		t.Fatalf("classify took %q for a response: %v", msg, err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatalf("withID(%q, %s) = %q: %v", msg, id, out, err)
	}
	if got := after["id"]; !bytes.Equal(got, id) {
		t.Fatalf("withID(%q, %s) = %q: id %s", msg, id, out, got)
	}
	delete(before, "id")
	delete(after, "id")
	if len(before) != len(after) {
		t.Fatalf("withID(%q, %s) = %q: members %d, want %d", msg, id, out, len(after), len(before))
	}
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Fatalf("withID(%q, %s) = %q: member %q is %s, want %s", msg, id, out, k, after[k], v)
		}
	}
	// Byte for byte: out is msg with the id's value replaced, or with
	// "id":<id>, put first.
	old, hasOld := idValue(t, msg)
	want := len(msg) - len(old) + len(id)
	if !hasOld {
		want = len(msg) + len(`"id":`) + len(id)
		if bytes.IndexByte(msg[1:len(msg)-1], '"') >= 0 {
			want++ // the comma
		}
	}
	if len(out) != want {
		t.Fatalf("withID(%q, %s) = %q: %d bytes, want %d", msg, id, out, len(out), want)
	}
}

// idValue returns the raw value of msg's "id" member (decoded name), as
// encoding/json's decoder reads it.
func idValue(t *testing.T, msg []byte) ([]byte, bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var old []byte
	found := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if k == "id" {
			old, found = v, true
		}
	}
	return old, found
}

var r28bIDs = []string{`0`, `-0`, `1e3`, `-1E+3`, `1.5`, `""`, `"\u0000"`, `null`, `123456789012345678901234567890`,
	`"a\"b\\c"`, `"\ud800"`, `"é"`, `"x y"`}

var r28bMessages = []string{
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"result":{}}`,
	`{"result":{},"id":1}`,
	`{"jsonrpc":"2.0","result":{"id":9,"x":{"id":8}},"id":"z"}`,
	`{"jsonrpc":"2.0","\u0069d":2,"result":null}`,
	`{"jsonrpc":"2.0","i\u0064":2,"error":{"code":1,"message":"m"}}`,
	" \t\r\n{ \t\r\n\"id\" \t\r\n: \t\r\n3 \t\r\n, \"result\" : [ ] \t\r\n} \t\r\n",
	"{\n\"result\"\n:\n1\n}",
	`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"result":1}`,
	`{"x\"id":1,"result":1}`,
	`{"id\\":1,"result":1}`,
	`{"jsonrpc":"2.0","id":1,"result":"}","y":"{\"id\":2}"}`,
	`{"jsonrpc":"2.0","id":[1,{"id":2}],"result":1}`,
	`{"jsonrpc":"2.0","id":{"a":1},"result":1}`,
	"\ufeff" + `{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"id":1,"id":2,"result":{}}`,
	`{"ID":1,"result":{}}`,
	`{"id\u0000":1,"result":{}}`,
}

// TestReview28bWithIDShapes: withID gives valid JSON with the member's id
// and everything else byte for byte, for ids and answers of every shape.
func TestReview28bWithIDShapes(t *testing.T) {
	for _, m := range r28bMessages {
		for _, id := range r28bIDs {
			r28bCheckWithID(t, []byte(m), []byte(id))
		}
	}
}

// FuzzReview28bWithID compares withID with encoding/json.
func FuzzReview28bWithID(f *testing.F) {
	for _, m := range r28bMessages {
		for _, id := range r28bIDs[:3] {
			f.Add([]byte(m), []byte(id))
		}
	}
	f.Fuzz(func(t *testing.T, msg, id []byte) {
		id = bytes.TrimSpace(id)
		if !json.Valid(id) || len(id) == 0 {
			return
		}
		r28bCheckWithID(t, msg, id)
	})
}

// r28bSplitLines splits an event stream's lines as httpx-sse (up to
// 0.4.1, under the Python SDK) does: as str.splitlines, at VT, FF, FS, GS,
// RS, NEL, U+2028 and U+2029 too.
func r28bSplitLines(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			return true
		}
		return false
	})
}

// TestReview28bBatchStreamScripts: the same downstream scripts give a JSON
// client and a stream client the same answers, one per request member with
// its id, and one Warn line per member that had answers dropped, with
// their count; a stream client gets the downstream's requests too, and
// nothing a client could read as another answer.
func TestReview28bBatchStreamScripts(t *testing.T) {
	const (
		fake2   = `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"fake"}]}}`
		elicit  = `{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{"message":"?"}}`
		okList  = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}}`
		badList = `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"Tools":[{"name":"admin_reset_key"}]}}`
	)
	sseOf := func(datas ...string) string {
		var b strings.Builder
		for _, d := range datas {
			b.WriteString("event: message\ndata: " + d + "\n\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		// answers maps a member's method (or tool) to the downstream's
		// event stream for it.
		answers map[string]string
		want    map[string]string // id -> "result" or an error code
		drops   []string          // "method=... count=N" of the Warn lines
		relayed []string          // relayed to a stream client
	}{
		{name: "filter_refuses_first", answers: map[string]string{"tools/list": sseOf(badList, okList)},
			want: map[string]string{"1": "result", "2": "-32001"}, drops: []string{"method=tools/list tool=\"\" count=1"}},
		{name: "server_request_after_answer", answers: map[string]string{"tools/list": sseOf(okList, elicit, fake2)},
			want: map[string]string{"1": "result", "2": "-32001"}, drops: []string{"method=tools/list tool=\"\" count=1"}, relayed: []string{elicit}},
		{name: "notification_member", answers: map[string]string{"tools/list": sseOf(okList),
			"notifications/cancelled": sseOf(elicit, fake2, `{"jsonrpc":"2.0","id":1,"result":{}}`)},
			want: map[string]string{"1": "result", "2": "-32001"}, drops: []string{"method=notifications/cancelled tool=\"\" count=2"}, relayed: []string{elicit}},
		{name: "client_response_member", answers: map[string]string{"tools/list": sseOf(okList), "": sseOf(fake2)},
			want: map[string]string{"1": "result", "2": "-32001"}, drops: []string{"method=\"\" tool=\"\" count=1"}},
		{name: "line_break_smuggle", answers: map[string]string{"tools/list": sseOf(okList), "tools/call": ": x\x1cdata: " + fake2 + "\n\n" +
			"event: message\u2028data: " + fake2 + "\n\n" + sseOf(`{"jsonrpc":"2.0","id":3,"result":{}}`)},
			want: map[string]string{"1": "result", "2": "-32001"}},
	} {
		for _, sse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sse=%v", tc.name, sse), func(t *testing.T) {
				tc.want["3"] = "result"
				url, logs := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, body string) {
					var m struct {
						Method string `json:"method"`
					}
					json.Unmarshal([]byte(body), &m)
					w.Header().Set("Content-Type", "text/event-stream")
					a, ok := tc.answers[m.Method]
					if !ok && m.Method == "tools/call" {
						a = sseOf(`{"jsonrpc":"2.0","id":3,"result":{}}`)
					}
					io.WriteString(w, a)
				})
				batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},` + call(`2`, "admin_reset_key", "") + `,` + call(`3`, "get_customer_record", "") +
					`,{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}` +
					`,{"jsonrpc":"2.0","id":"srv-9","result":{}}]`
				got := r28Post(t, url, batch, sse)
				seen := map[string]int{}
				for _, m := range r28Messages(t, got) {
					if _, ok := m["method"]; ok {
						continue
					}
					id := string(m["id"])
					seen[id]++
					want, ok := tc.want[id]
					if !ok {
						t.Errorf("answer for id %s: %v", id, m)
						continue
					}
					if want == "result" && m["result"] == nil || want != "result" && !strings.Contains(string(m["error"]), want) {
						t.Errorf("id %s answered %s%s, want %s", id, m["result"], m["error"], want)
					}
					if strings.Contains(string(m["result"]), "admin_reset_key") {
						t.Errorf("id %s: hidden tool listed: %s", id, m["result"])
					}
				}
				for id := range tc.want {
					if seen[id] != 1 {
						t.Errorf("id %s answered %d times: %s", id, seen[id], got.body)
					}
				}
				if sse {
					// As a client that splits lines at more characters
					// reads the stream: no answer but the members'.
					for _, l := range r28bSplitLines(got.body) {
						if d, ok := strings.CutPrefix(l, "data:"); ok && strings.Contains(d, `"fake"`) {
							t.Errorf("a client reads a fake answer: %q", l)
						}
					}
					for _, want := range tc.relayed {
						if !strings.Contains(got.body, "data: "+want+"\n") {
							t.Errorf("%s not relayed: %s", want, got.body)
						}
					}
				}
				n := strings.Count(logs.String(), `msg="upstream answers dropped"`)
				if n != len(tc.drops) {
					t.Errorf("%d Warn lines for dropped answers, want %d; log:\n%s", n, len(tc.drops), logs)
				}
				for _, d := range tc.drops {
					if !strings.Contains(logs.String(), d) {
						t.Errorf("no Warn line with %s; log:\n%s", d, logs)
					}
				}
			})
		}
	}
}
