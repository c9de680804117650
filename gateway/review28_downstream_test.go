package gateway

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// r28Gateway is a gateway with opts in front of a downstream whose answer
// to each request the test writes byte for byte: answer gets the request
// and its body.
func r28Gateway(t *testing.T, opts *Options, answer func(w http.ResponseWriter, r *http.Request, body string)) (url string, logs *syncLog) {
	t.Helper()
	d := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		answer(w, r, string(b))
	}))
	t.Cleanup(d.Close)
	var o Options
	if opts != nil {
		o = *opts
	}
	logs = &syncLog{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	g, err := New(d.URL+"/mcp", DemoTokens(), &o)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	return gw.URL, logs
}

// TestReview28FilterHidesUncallableNames: with FilterToolsList, a listed
// tool whose name the gateway refuses to call (white space at an end, a
// control character: policy.CheckName) is withheld, as the option promises
// ("the tools the caller may not call"). " admin_reset_key" matched no
// admin_* rule and was shown to a viewer, who can call it under no
// spelling: the hidden tool's name leaked, and a client that trims names
// would call admin_reset_key.
func TestReview28FilterHidesUncallableNames(t *testing.T) {
	names := []string{" admin_reset_key", "admin_reset_key\t", "\u0000admin_reset_key", "get\u0085data", "\ufffdadmin_reset_key"}
	var tools []string
	for _, n := range names {
		b, _ := json.Marshal(n)
		tools = append(tools, `{"name":`+string(b)+`}`)
	}
	listing := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Join(tools, ",") + `,{"name":"get_customer_record"}]}}`
	for _, sse := range []bool{false, true} {
		url, _ := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, body string) {
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: message\ndata: "+listing+"\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, listing)
		})
		rg := &rig{url: url}
		got := rg.post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		body := got.body
		if sse {
			body = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(body, "event: message\n"), "data: "))
		}
		var res struct {
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatalf("sse=%v: answer %q: %v", sse, got.body, err)
		}
		var listed []string
		for _, tl := range res.Result.Tools {
			listed = append(listed, tl.Name)
		}
		if len(listed) != 1 || listed[0] != "get_customer_record" {
			t.Errorf("sse=%v: viewer's filtered listing = %q, want only get_customer_record (the others cannot be called)", sse, listed)
		}
		// And each is indeed refused when called.
		for _, n := range names {
			b, _ := json.Marshal(n)
			r := rg.post(t, viewer, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":`+string(b)+`,"arguments":{}}}`)
			if _, code, _ := rpcErr(t, r.body); code == 0 {
				t.Errorf("tools/call %q was not refused: %s", n, r.body)
			}
		}
	}
}

// TestReview28FilteredListFailureLogged: a filtered tools/list whose
// answer the gateway could not read (cut short, not JSON) was answered 502
// with nothing in the log after "allow": a tools/list has no audit record,
// so the log is the only trail of why the client got an upstream error. It
// names the correlation id and what failed, as a relayed answer's
// "upstream" line does.
func TestReview28FilteredListFailureLogged(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"cut_filter", Options{FilterToolsList: true}, "unexpected EOF"},
		{"notjson_filter", Options{FilterToolsList: true}, "not JSON"},
		{"cut_pins", Options{Pins: TrustOnFirstUse()}, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, logs := r28Gateway(t, &tc.opts, func(w http.ResponseWriter, r *http.Request, body string) {
				w.Header().Set("Content-Type", "application/json")
				if strings.HasPrefix(tc.name, "cut") {
					w.Header().Set("Content-Length", "100")
					io.WriteString(w, `{"jsonrpc":`)
					w.(http.Flusher).Flush()
					panic(http.ErrAbortHandler)
				}
				io.WriteString(w, `{"jsonrpc":"2.0"`)
			})
			got := (&rig{url: url}).post(t, viewer, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			if got.status != http.StatusBadGateway {
				t.Fatalf("status %d, want 502: %s", got.status, got.body)
			}
			_, _, data := rpcErr(t, got.body)
			cid, _ := data["correlation_id"].(string)
			var line string
			for l := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(l, "cid="+cid) && !strings.Contains(l, "msg=allow") {
					line = l
				}
			}
			if !strings.Contains(line, "upstream") || !strings.Contains(line, tc.want) {
				t.Errorf("no log line saying why the answer failed (want %q); log:\n%s", tc.want, logs)
			}
		})
	}
}

// TestReview28BatchMemberFailureLogged: a batch member whose answer broke
// off is answered -32003; the log says why (a tools/list member has no
// audit record), not only the batch's summary line.
func TestReview28BatchMemberFailureLogged(t *testing.T) {
	for _, sse := range []bool{false, true} {
		url, logs := r28Gateway(t, &Options{FilterToolsList: true}, func(w http.ResponseWriter, r *http.Request, body string) {
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"jsonrpc\":")
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, `{"jsonrpc":`)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
		got := (&rig{url: url}).post(t, viewer, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, "Accept", "application/json")
		if !strings.Contains(got.body, "-32003") {
			t.Fatalf("sse=%v: answer %q, want -32003 for each member", sse, got.body)
		}
		if n := strings.Count(logs.String(), "msg=\"upstream error\""); n != 2 {
			t.Errorf("sse=%v: %d \"upstream error\" lines, want one per member; log:\n%s", sse, n, logs)
		}
	}
}
