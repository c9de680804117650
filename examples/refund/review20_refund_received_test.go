package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReview20ReceivedKeepsBoundedEntries: GET /_received keeps the last
// maxRecorded requests, and each of them in a bounded size: a client that
// sends an id, a method, a tool name or gateway headers of hundreds of
// kilobytes (bodies may have 4 MiB, headers 1 MiB) must not make the list
// hold maxRecorded times that. A cut entry says so.
func TestReview20ReceivedKeepsBoundedEntries(t *testing.T) {
	base := startHTTP(t)
	big := strings.Repeat("x", 100_000)
	headers := map[string]string{headerSubject: "s" + big, headerRole: "r" + big, headerRequestID: "q" + big}
	postOnly(t, base, `{"jsonrpc":"2.0","id":"`+big+`","method":"tools/call","params":{"name":"`+big+`","arguments":{}}}`, headers)
	postOnly(t, base, `{"jsonrpc":"2.0","id":7,"method":"m`+big+`"}`, nil)
	postOnly(t, base, `{"jsonrpc":"2.0","id":1`+strings.Repeat("0", 100_000)+`,"method":"ping"}`, nil)
	postOnly(t, base, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_customer_record","arguments":{"customer_id":"CUST-00001"}}}`,
		map[string]string{headerSubject: "alice@example.com", headerRole: "support", headerRequestID: "req-1"})

	got := received(t, base)
	if len(got) != 4 {
		t.Fatalf("/_received lists %d requests, want 4", len(got))
	}
	for i, r := range got[:3] {
		for name, v := range map[string]string{"method": r.Method, "id": string(r.ID), "tool": r.Tool, "subject": r.Subject, "role": r.Role, "request_id": r.RequestID} {
			if len(v) > 2*maxField {
				t.Errorf("entry %d: %s of %d bytes kept, want at most about %d", i, name, len(v), maxField)
			}
		}
		if !r.Truncated {
			t.Errorf("entry %d (%.40s...) was cut but does not say so (truncated false)", i, r.Method)
		}
	}
	if r := got[0]; !strings.HasPrefix(r.Tool, "xxx") || !strings.HasPrefix(r.Subject, "sxx") || !strings.HasPrefix(r.RequestID, "qxx") || r.Method != "tools/call" {
		t.Errorf("cut entry (tool %.20q, subject %.20q, request_id %.20q, method %.20q): want the start of each field kept", r.Tool, r.Subject, r.RequestID, r.Method)
	}
	if r := got[3]; r.Truncated || r.Tool != "get_customer_record" || string(r.ID) != "8" || r.Subject != "alice@example.com" || r.RequestID != "req-1" {
		t.Errorf("ordinary entry %+v: want it as sent, not cut", r)
	}
}

// postOnly POSTs body to base's /mcp with headers, whatever the answer.
func postOnly(t *testing.T, base, body string, headers map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
}

// TestReview20ReceivedBatchIsCheap: the recorder's cost for a batch is its
// parse, not a shift of the whole list for each of its messages (a
// batch of 500000 took about 2.5 s, one of 4 MiB, the most a POST may
// have, over 10 s of CPU; now some 40 ms), and it still lists the batch's
// last maxRecorded messages. The recorder is run on its own, so that the
// time measured is its own, not the go-sdk's parse. The batch's time is
// judged against the recorder's for one message of the same size (a fixed
// 1 s bound failed under -race on a busy host, where the batch took 1.2 s).
func TestReview20ReceivedBatchIsCheap(t *testing.T) {
	const n = 500_000
	body := "[" + strings.Repeat("0,", n-1) + `{"jsonrpc":"2.0","id":99,"method":"ping"}]`
	one := `{"jsonrpc":"2.0","id":98,"method":"ping","params":[` + strings.Repeat("0,", n-1) + `0]}`
	rec := &ring[receivedRequest]{}
	h := recorder(rec, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	took := func(body string) time.Duration {
		start := time.Now()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)))
		return time.Since(start)
	}
	base := took(one)
	if d := took(body); d > 8*base+300*time.Millisecond {
		t.Errorf("a batch of %d messages recorded in %v; one message of %d bytes in %v", n, d, len(one), base)
	}
	got := rec.list()
	if len(got) != maxRecorded {
		t.Fatalf("the list holds %d requests, want %d (the last of the batch)", len(got), maxRecorded)
	}
	if last := got[len(got)-1]; last.Method != "ping" || string(last.ID) != "99" {
		t.Errorf("last entry %+v, want the batch's last message (ping, id 99)", last)
	}
	if first := got[0]; first.Method != "(unparseable)" {
		t.Errorf("first entry %+v, want one of the batch's unparseable members", first)
	}
}

// TestReview20BatchTailReadsAsUnmarshal: batchTail splits a batch as
// json.Unmarshal into []json.RawMessage does (commas and brackets inside
// strings, escapes, nesting, white space), keeps its last n members, and
// refuses what Unmarshal refuses.
func TestReview20BatchTailReadsAsUnmarshal(t *testing.T) {
	for _, b := range []string{
		`[]`, ` [ ] `, `[0]`, "[\n1 ,\t2 , 3\n]", `[{"a":[1,2,{"b":"],[{"}]},"x,y"]`,
		`["\\",",","\\\"]",{"k":"\u005d,"}]`, `[[[]],[[],[]],{}]`, `["é,ü","😀",null,true,false,-1.5e3]`,
		`[` + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, 30) + `7]`,
	} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(b), &want); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, n := range []int{1, 3, 1000} {
			got, ok := batchTail([]byte(b), n)
			w := want[max(0, len(want)-n):]
			if !ok || len(got) != len(w) {
				t.Errorf("batchTail(%s, %d) = %d members, %v; want %d", b, n, len(got), ok, len(w))
				continue
			}
			for i := range w {
				if !bytes.Equal(got[i], w[i]) {
					t.Errorf("batchTail(%s, %d)[%d] = %s, want %s", b, n, i, got[i], w[i])
				}
			}
		}
	}
	for _, b := range []string{`[`, `]`, `[1,]`, `[,1]`, `[1 2]`, `[1]]`, `[1] [2]`, `["]`, `{"a":1}`, `[1]x`, "[\"\xff\"]x"} {
		if got, ok := batchTail([]byte(b), 5); ok {
			t.Errorf("batchTail(%q) = %q, true; want not a batch", b, got)
		}
	}
}

// TestReview20ReceivedShowsInvisibleCharacters: GET /_received is read by
// people (the demo's curl), and a tool name a client chose may hold
// characters a terminal shows as nothing or that reorder the text:
// "\u200badmin_reset_key" (which the gateway's admin_ rule does not
// catch, and the server does not know) must not read as admin_reset_key
// having reached the server. The list is ASCII JSON: every other character
// is a \u escape, the same value to a JSON reader.
func TestReview20ReceivedShowsInvisibleCharacters(t *testing.T) {
	base := startHTTP(t)
	for _, name := range []string{"\u200badmin_reset_key", "admin_\u202eyek_teser", "\U000e0061dmin_reset_key", "café"} {
		b, err := json.Marshal(name)
		if err != nil {
			t.Fatal(err)
		}
		postOnly(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":`+string(b)+`,"arguments":{}}}`,
			map[string]string{headerSubject: "mallory\u00a0"})
	}
	res, err := http.Get(base + "/_received")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range body {
		if c >= 0x7f || c < 0x20 && c != '\n' {
			t.Fatalf("/_received has byte %#x at %d, want ASCII JSON: %s", c, i, body)
		}
	}
	for _, want := range []string{`"\u200badmin_reset_key"`, `"admin_\u202eyek_teser"`, `"\udb40\udc61dmin_reset_key"`, `"caf\u00e9"`} {
		if !bytes.Contains(bytes.ToLower(body), []byte(want)) {
			t.Errorf("/_received does not show %s: %s", want, body)
		}
	}
	var got []receivedRequest
	if err := json.Unmarshal(body, &got); err != nil || len(got) != 4 || got[0].Tool != "\u200badmin_reset_key" || got[3].Tool != "café" {
		t.Errorf("/_received does not read back as the names sent: %v %+v", err, got)
	}
}
