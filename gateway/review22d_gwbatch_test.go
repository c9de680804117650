package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/policy"
)

// batchAnswers decodes a batch's JSON answer into its members' ids (as
// written) and error codes (0 for a result), in the order written.
func batchAnswers(t *testing.T, body string) (ids []string, codes []int) {
	t.Helper()
	var out []struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("the batch's answer %.300q is not a JSON array: %v", body, err)
	}
	for _, m := range out {
		ids = append(ids, string(m.ID))
		code := 0
		if m.Error != nil {
			code = m.Error.Code
		}
		codes = append(codes, code)
	}
	return ids, codes
}

// TestReview22dBatchNULNames: in a batch, a member whose envelope, params
// or limited argument name equals a known one up to a NUL is refused
// alone: the other members are forwarded, the answers merged in the
// client's order, and each tools/call member has one outcome record.
func TestReview22dBatchNULNames(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Tools = append(cfg.Tools, policy.ToolRule{Name: "trigger_refund", Class: policy.Read,
		ArgLimits: []policy.ArgLimit{{Field: "amount", Max: 100}}})
	pol, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	rg := newRig(t, &Options{Policy: pol, Audit: sink})
	members := []string{
		call(`1`, "get_customer_record", ""),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name\u0000":"admin_reset_key","name":"get_customer_record","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","method\u0000":"tools/list","params":{"name":"get_customer_record"}}`,
		call(`4`, "trigger_refund", `{"amount\u0000":1e9,"amount":1}`),
		call(`5`, "trigger_refund", `{"amount":1}`),
		`{"jsonrpc":"2.0","id":6,"method\u0000":"tools/call","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
	}
	got := rg.post(t, viewer, "["+strings.Join(members, ",")+"]")
	if got.status != http.StatusOK {
		t.Fatalf("the batch: %d %.300s", got.status, got.body)
	}
	ids, codes := batchAnswers(t, got.body)
	wantIDs := []string{"1", "2", "3", "4", "5", "6", "7"}
	wantCodes := []int{0, CodeInvalidParams, CodeInvalidRequest, CodeForbidden, 0, CodeInvalidRequest, 0}
	if strings.Join(ids, ",") != strings.Join(wantIDs, ",") {
		t.Errorf("answers' ids %v, want %v", ids, wantIDs)
	}
	for i := range codes {
		if i < len(wantCodes) && codes[i] != wantCodes[i] {
			t.Errorf("member %s answered with code %d, want %d (%.300s)", ids[i], codes[i], wantCodes[i], got.body)
		}
	}
	var sent []string
	for _, b := range rg.down.bodies() {
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(b), &m)
		sent = append(sent, string(m.ID))
		if strings.Contains(b, `\u0000`) {
			t.Errorf("the downstream received %s", b)
		}
	}
	slices.Sort(sent)
	if strings.Join(sent, ",") != "1,5,7" {
		t.Errorf("the downstream received members %v, want 1, 5 and 7", sent)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var recs []string
	for _, e := range sink.evs {
		if e.Phase == audit.PhaseOutcome {
			recs = append(recs, e.Tool+":"+e.Code)
		}
	}
	// One outcome for each member the gateway read as a tools/call (3's
	// tool is not read: its params were not; 6's method was not).
	slices.Sort(recs)
	want := []string{":INVALID_ARGUMENTS", ":INVALID_REQUEST", "get_customer_record:", "trigger_refund:", "trigger_refund:FORBIDDEN"}
	if !slices.Equal(recs, want) {
		t.Errorf("outcome records %v, want %v", recs, want)
	}
}

// TestReview22dBatchMemberHeaders: the members of a batch sent with
// Mcp-Method from a listed origin are sent alone each with its own method
// and name, the client's Content-Type, and neither Origin nor
// Sec-Fetch-Site.
func TestReview22dBatchMemberHeaders(t *testing.T) {
	const app = "https://app.example.com"
	rg := newRig(t, &Options{AllowedOrigins: []string{app}})
	body := "[" + call(`1`, "get_customer_record", "") + `,{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
	got := rg.post(t, viewer, body, "Origin", app, "Sec-Fetch-Site", "cross-site", "Mcp-Method", "tools/call",
		"Mcp-Name", "get_customer_record", "Mcp-Param-Region", "eu")
	if got.status != http.StatusOK {
		t.Fatalf("the batch: %d %.300s", got.status, got.body)
	}
	log := rg.down.log()
	if len(log) != 2 {
		t.Fatalf("the downstream received %d requests, want 2", len(log))
	}
	for _, r := range log {
		h := r.Header
		want := map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_customer_record"}
		if strings.Contains(r.Body, "tools/list") {
			want = map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": ""}
		}
		for k, v := range want {
			if vs := h.Values(k); v == "" && len(vs) != 0 || v != "" && (len(vs) != 1 || vs[0] != v) {
				t.Errorf("%s: %s %q, want %q", r.Body, k, vs, v)
			}
		}
		for _, k := range []string{"Origin", "Sec-Fetch-Site", "Mcp-Param-Region"} {
			if v := h.Values(k); len(v) != 0 {
				t.Errorf("%s: the downstream got %s %q", r.Body, k, v)
			}
		}
		if v := h.Values("Content-Type"); len(v) != 1 || v[0] != "application/json" {
			t.Errorf("%s: Content-Type %q, want the client's", r.Body, v)
		}
	}
	// A batch whose Content-Type names its charset twice is refused whole.
	n := len(rg.down.log())
	got = rg.send(t, http.MethodPost, body, "Origin", app, "Mcp-Method", "tools/call", "Content-Type", "application/json; charset=utf-7; charset*=utf-8''utf-8")
	if got.status != http.StatusUnsupportedMediaType || len(rg.down.log()) != n {
		t.Errorf("charset twice: %d %.300s, downstream received %d; want 415, nothing forwarded", got.status, got.body, len(rg.down.log())-n)
	}
}

// TestReview22dBatchAnswerCharsetTwice: a batch member whose answer the
// gateway must read (with Pins, or a filtered tools/list) comes as an
// event stream whose Content-Type names its charset twice: that member is
// answered with an upstream error, and recorded so, the batch's other
// members with their answers, whether the client takes the merged answer
// as JSON or as an event stream.
func TestReview22dBatchAnswerCharsetTwice(t *testing.T) {
	inject := utf7(`","tools":[` + poisonedTool + `],"x":"`)
	down := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &msg)
		if string(msg.ID) == "2" {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-7; charset*=utf-8''utf-8")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[],\"x\":\""+inject+"\"}}\n\n")
			return
		}
		result := `{"content":[]}`
		if msg.Method == "tools/list" {
			result = `{"tools":[` + goodTool + `]}`
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\"result\":"+result+"}\n\n")
	}))
	for _, mode := range []string{"pins", "filter"} {
		for _, accept := range []string{"application/json", "application/json, text/event-stream"} {
			t.Run(mode+"/"+accept, func(t *testing.T) {
				sink := &memSink{}
				o := &Options{Logger: discardLogger(), Audit: sink, FilterToolsList: mode == "filter"}
				if mode == "pins" {
					o.Pins = fixedGoodPins(t)
				}
				g, err := New(down.URL+"/mcp", DemoTokens(), o)
				if err != nil {
					t.Fatal(err)
				}
				rg := &rig{url: newServer(t, g).URL}
				second := call(`2`, "get_customer_record", "")
				if mode == "filter" {
					second = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
				}
				body := "[" + call(`1`, "get_customer_record", "") + "," + second + "," + call(`3`, "get_customer_record", "") + "]"
				got := rg.send(t, http.MethodPost, body, "Authorization", admin, "Accept", accept)
				if got.status != http.StatusOK {
					t.Fatalf("the batch: %d %.300s", got.status, got.body)
				}
				if strings.Contains(got.body, inject) {
					t.Errorf("relayed the answer read as UTF-8 that httpx decodes as UTF-7: %.400q", got.body)
				}
				answers := got.body
				if strings.HasPrefix(got.header.Get("Content-Type"), "text/event-stream") {
					var msgs []string
					for l := range strings.SplitSeq(got.body, "\n") {
						if d, ok := strings.CutPrefix(l, "data: "); ok {
							msgs = append(msgs, d)
						}
					}
					answers = "[" + strings.Join(msgs, ",") + "]"
				}
				ids, codes := batchAnswers(t, answers)
				byID := map[string]int{}
				for i, id := range ids {
					byID[id] = codes[i]
				}
				if len(ids) != 3 || byID["1"] != 0 || byID["2"] != CodeUpstreamUnavailable || byID["3"] != 0 {
					t.Errorf("answers %v codes %v, want 1 and 3 answered, 2 an upstream error: %.400s", ids, codes, got.body)
				}
				if mode == "pins" {
					var codes []string
					for _, e := range sink.outcomes("get_customer_record") {
						codes = append(codes, e.Code)
					}
					slices.Sort(codes)
					if !slices.Equal(codes, []string{"", "", "UPSTREAM_UNAVAILABLE"}) {
						t.Errorf("outcome codes %q, want two relayed and one UPSTREAM_UNAVAILABLE", codes)
					}
				}
			})
		}
	}
}

// TestReview22dNULNameShownCut: the refusal of a member name that equals
// a known one up to a NUL shows the name cut, as every name a client
// chooses is shown: anything may follow the NUL, so the name is as long as
// the body allows, and strconv.Quote wrote it whole, each soft hyphen
// tripled (\u00ad), into the answer and into the call's outcome record
// (3 MiB of a 1 MiB member here, for each such member of a batch).
func TestReview22dNULNameShownCut(t *testing.T) {
	sink := &memSink{}
	rg := newRig(t, &Options{Audit: sink})
	tail := strings.Repeat("\u00ad", 512<<10) // 1 MiB
	members := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name\u0000` + tail + `":"admin_reset_key","name":"get_customer_record"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_customer_record"},"id\u0000` + tail + `":3}`,
		call(`3`, "get_customer_record", ""),
	}
	got := rg.post(t, viewer, "["+strings.Join(members, ",")+"]")
	if got.status != http.StatusOK {
		t.Fatalf("the batch: %d %.300s", got.status, got.body)
	}
	if len(got.body) > 8<<10 {
		t.Errorf("the batch's answer holds %d bytes, want the names shown cut: %.300s", len(got.body), got.body)
	}
	ids, codes := batchAnswers(t, got.body)
	if !slices.Equal(ids, []string{"1", "2", "3"}) || !slices.Equal(codes, []int{CodeInvalidParams, CodeInvalidRequest, 0}) {
		t.Errorf("answers %v codes %v, want 1 and 2 refused, 3 answered", ids, codes)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	n := 0
	for _, e := range sink.evs {
		if e.Phase == audit.PhaseOutcome && !e.Allowed {
			n++
			if len(e.Detail) > 1<<10 {
				t.Errorf("a %s record's detail holds %d bytes: %.200q", e.Code, len(e.Detail), e.Detail)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d refusals recorded, want 2", n)
	}
}
