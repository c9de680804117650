package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// r28Post posts body as the viewer, accepting an event stream only when sse.
func r28Post(t *testing.T, url, body string, sse bool) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if sse {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	req.Header.Set("Authorization", viewer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// r28Messages returns the JSON-RPC messages of a merged batch answer, a
// JSON array or an event stream, as a client reads them: an event's data
// with white space around it, or an array of messages, counts too.
func r28Messages(t *testing.T, got reply) []map[string]json.RawMessage {
	t.Helper()
	var datas [][]byte
	if strings.HasPrefix(got.header.Get("Content-Type"), "text/event-stream") {
		for ev := range strings.SplitSeq(got.body, "\n\n") {
			var data []string
			for l := range strings.SplitSeq(ev, "\n") {
				if v, ok := strings.CutPrefix(l, "data:"); ok {
					data = append(data, strings.TrimPrefix(v, " "))
				}
			}
			if data != nil {
				datas = append(datas, []byte(strings.Join(data, "\n")))
			}
		}
	} else if got.body != "" {
		datas = append(datas, []byte(got.body))
	}
	var out []map[string]json.RawMessage
	for _, d := range datas {
		var one map[string]json.RawMessage
		if json.Unmarshal(d, &one) == nil {
			out = append(out, one)
			continue
		}
		var many []map[string]json.RawMessage
		if json.Unmarshal(d, &many) == nil {
			out = append(out, many...)
			continue
		}
		t.Logf("data a client cannot read: %q", d)
	}
	return out
}

// TestReview28BatchAnswerIDs: in a merged batch, each forwarded request
// member gets exactly one response, with its own id byte for byte,
// whatever ids the downstream wrote and however many answers it sent; a
// denied member gets only the gateway's refusal. Before, a member's answer
// was relayed with the downstream's id: answering member 1 with the denied
// member 2's id left 1 unanswered and gave 2 a "success" (first in client
// order in a stream), a second answer or an answer array named ids twice,
// and the go-sdk's id 1 for 1.5 did not come back as 1.5.
func TestReview28BatchAnswerIDs(t *testing.T) {
	const (
		okResult = `"result":{"content":[{"type":"text","text":"ok"}]}`
		fake     = `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"fake"}]}}`
		elicit   = `{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{"message":"?"}}`
		progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
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
		id   string // the allowed member's id
		ct   string // the downstream's Content-Type
		body string // its answer to the allowed member
		// want is what the allowed member gets: "result", or "-32003".
		want string
		// dropped: a Warn line names the answers dropped.
		dropped bool
		// relayed are messages that an event stream relays unchanged.
		relayed []string
	}{
		{name: "own_id_json", id: `1`, ct: "application/json", body: `{"jsonrpc":"2.0","id":1,` + okResult + `}`, want: "result"},
		{name: "wrong_id_json", id: `1`, ct: "application/json", body: fake, want: "result"},
		{name: "wrong_id_sse", id: `1`, ct: "text/event-stream", body: sseOf(fake), want: "result"},
		{name: "float_id_json", id: `1.5`, ct: "application/json", body: `{"jsonrpc":"2.0","id":1,` + okResult + `}`, want: "result"},
		{name: "float_id_sse", id: `1.5`, ct: "text/event-stream", body: sseOf(`{"jsonrpc":"2.0","id":1,` + okResult + `}`), want: "result"},
		{name: "zero_id", id: `0`, ct: "application/json", body: fake, want: "result"},
		{name: "empty_string_id", id: `""`, ct: "application/json", body: fake, want: "result"},
		{name: "null_id", id: `null`, ct: "text/event-stream", body: sseOf(fake), want: "result"},
		{name: "escaped_id", id: `"a\"b"`, ct: "application/json", body: `{"jsonrpc":"2.0","id":"a\"b",` + okResult + `}`, want: "result"},
		{name: "no_id_in_answer", id: `1`, ct: "application/json", body: `{"jsonrpc":"2.0",` + okResult + `}`, want: "result"},
		{name: "array_json", id: `1`, ct: "application/json", body: `[{"jsonrpc":"2.0","id":1,` + okResult + `},` + fake + `]`, want: "-32003", dropped: true},
		{name: "twice_sse", id: `1`, ct: "text/event-stream", body: sseOf(`{"jsonrpc":"2.0","id":1,`+okResult+`}`, fake), want: "result", dropped: true},
		{name: "fake_first_sse", id: `1`, ct: "text/event-stream", body: sseOf(fake, `{"jsonrpc":"2.0","id":1,`+okResult+`}`), want: "result", dropped: true},
		{name: "array_sse", id: `1`, ct: "text/event-stream", body: sseOf(`[`+fake+`]`, `{"jsonrpc":"2.0","id":1,`+okResult+`}`), want: "result", dropped: true},
		{name: "spaced_sse", id: `1`, ct: "text/event-stream", body: "event: message\ndata:   " + fake + "\n\n", want: "result"},
		{name: "server_request_sse", id: `1`, ct: "text/event-stream", body: sseOf(elicit, progress, `{"jsonrpc":"2.0","id":1,`+okResult+`}`), want: "result",
			relayed: []string{elicit, progress}},
		{name: "no_answer_sse", id: `1`, ct: "text/event-stream", body: sseOf(progress), want: "-32003", relayed: []string{progress}},
	} {
		for _, sse := range []bool{false, true} {
			name := tc.name + "/json"
			if sse {
				name = tc.name + "/sse"
			}
			t.Run(name, func(t *testing.T) {
				sink := &memSink{}
				url, logs := r28Gateway(t, &Options{Audit: sink}, func(w http.ResponseWriter, r *http.Request, body string) {
					if !strings.Contains(body, `"id"`) {
						// The notification member: answered, wrongly, with a
						// response.
						w.Header().Set("Content-Type", "application/json")
						io.WriteString(w, fake)
						return
					}
					w.Header().Set("Content-Type", tc.ct)
					io.WriteString(w, tc.body)
				})
				batch := `[` + call(tc.id, "get_customer_record", "") + `,` + call(`2`, "admin_reset_key", "") +
					`,{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}]`
				got := r28Post(t, url, batch, sse)
				msgs := r28Messages(t, got)
				seen := map[string]int{}
				var cid string
				for _, m := range msgs {
					_, hasMethod := m["method"]
					_, hasResult := m["result"]
					_, hasError := m["error"]
					if hasMethod {
						continue
					}
					id := string(m["id"])
					seen[id]++
					switch id {
					case tc.id:
						if tc.want == "result" && !hasResult || tc.want != "result" && (!hasError || !strings.Contains(string(m["error"]), tc.want)) {
							t.Errorf("member %s answered %s%s, want %s", id, m["result"], m["error"], tc.want)
						}
					case `2`:
						if !hasError || !strings.Contains(string(m["error"]), "-32001") {
							t.Errorf("denied member 2 answered %s%s, want only the gateway's refusal", m["result"], m["error"])
						}
						var e struct {
							Data struct {
								CID string `json:"correlation_id"`
							} `json:"data"`
						}
						json.Unmarshal(m["error"], &e)
						cid = e.Data.CID
					}
				}
				if len(seen) != 2 || seen[tc.id] != 1 || seen[`2`] != 1 {
					t.Errorf("responses by id %v, want one for %s and one for 2; answer %d %s", seen, tc.id, got.status, got.body)
				}
				if sse && got.header.Get("Content-Type") == "text/event-stream" {
					for _, want := range tc.relayed {
						if !strings.Contains(got.body, "data: "+want+"\n") {
							t.Errorf("the server's message %s was not relayed unchanged: %s", want, got.body)
						}
					}
				}
				if tc.dropped && !strings.Contains(logs.String(), `msg="upstream answers dropped" cid=`+cid) {
					t.Errorf("no Warn line for the answers dropped (cid %s); log:\n%s", cid, logs)
				}
				// The allowed member's record says what it got; the denied
				// member has one record, its refusal.
				wantCode := ""
				if tc.want == "-32003" {
					wantCode = "UPSTREAM_UNAVAILABLE"
				}
				var evs []audit.Event
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if evs = sink.outcomes("get_customer_record"); len(evs) > 0 {
						break
					}
				}
				if len(evs) != 1 || evs[0].Code != wantCode || evs[0].Allowed != (wantCode == "") {
					t.Errorf("get_customer_record outcome records %+v, want one with code %q", evs, wantCode)
				}
				if evs := sink.outcomes("admin_reset_key"); len(evs) != 1 || evs[0].Code != "FORBIDDEN" {
					t.Errorf("admin_reset_key outcome records %+v, want one FORBIDDEN", evs)
				}
			})
		}
	}
}

// TestReview28BatchAnswerBytes: the answer is relayed byte for byte but
// its id, and for a filtered tools/list, its filtered listing.
func TestReview28BatchAnswerBytes(t *testing.T) {
	const list = `{"tools":[{"name":"get_customer_record"},{"name":"admin_reset_key"}]}`
	for _, sse := range []bool{false, true} {
		url, _ := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, body string) {
			w.Header().Set("Content-Type", "text/event-stream")
			if strings.Contains(body, "tools/list") {
				io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"+list+"}\n\n")
				return
			}
			io.WriteString(w, "data: {\"id\" : 1 ,\"jsonrpc\":\"2.0\",\"result\":{\"x\":[1, 2]}}\n\n")
		})
		got := r28Post(t, url, `[{"jsonrpc":"2.0","id":7.5,"method":"tools/list"},{"jsonrpc":"2.0","id":"p","method":"ping"}]`, sse)
		for _, want := range []string{
			`{"id" : "p" ,"jsonrpc":"2.0","result":{"x":[1, 2]}}`,
			`{"jsonrpc":"2.0","id":7.5,"result":{"tools":[{"name":"get_customer_record"}],"cacheScope":"private"}}`,
		} {
			if !strings.Contains(got.body, want) {
				t.Errorf("sse=%v: answer %s lacks %s", sse, got.body, want)
			}
		}
		if strings.Contains(got.body, "admin_reset_key") {
			t.Errorf("sse=%v: the hidden tool is listed: %s", sse, got.body)
		}
	}
}

// TestReview28BatchFloatIDGoSDK: a go-sdk downstream answers id 7.5 with
// 7; a batch member's answer comes back with 7.5, in a JSON array and in
// an event stream.
func TestReview28BatchFloatIDGoSDK(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"stateless_json", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		{"stateful_sse", &mcp.StreamableHTTPOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := &rig{url: sdkFilterGateway(t, tc.opts)}
			var hdr []string
			if !tc.opts.Stateless {
				hdr = []string{"Mcp-Session-Id", sdkSession(t, rg, viewer), "Mcp-Protocol-Version", "2025-06-18"}
			}
			got := rg.post(t, viewer, `[{"jsonrpc":"2.0","id":7.5,"method":"tools/list"},{"jsonrpc":"2.0","id":-1e3,"method":"ping"}]`, hdr...)
			seen := map[string]int{}
			for _, m := range r28Messages(t, got) {
				seen[string(m["id"])]++
			}
			if len(seen) != 2 || seen["7.5"] != 1 || seen["-1e3"] != 1 {
				t.Errorf("responses by id %v, want one for 7.5 and one for -1e3: %s", seen, got.body)
			}
		})
	}
}
