package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// postVersion POSTs body to base's /mcp on protocol version v and returns
// the HTTP status and the answer.
func postVersion(t *testing.T, base, v, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestReview20cReceivedReadsBodiesAsTheServer: /_received is to show what
// reached the server, read as the server reads it. The go-sdk reads a
// POSTed body's first JSON value (JSON white space before it skipped,
// anything after it ignored) and refuses a body that starts with any other
// character. The recorder read the whole body with encoding/json instead,
// after bytes.TrimSpace (Unicode white space): a tools/call followed by
// "xyz", which the server ran, was listed as "(unparseable)", as was a
// batch followed by " [2]" whose admin_list_audit_log ran on 2025-03-26;
// and a batch after a form feed or a no-break space, which the server
// refused unread, was listed as its messages.
func TestReview20cReceivedReadsBodiesAsTheServer(t *testing.T) {
	base := startHTTP(t)
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"admin_list_audit_log","arguments":{}}}`
	for _, tc := range []struct {
		name, version, body string
		ran                 bool // the server answered the call
		want                []receivedRequest
	}{
		{"trailing_text", "2025-06-18", call + "xyz", true,
			[]receivedRequest{{Method: "tools/call", ID: json.RawMessage("7"), Tool: "admin_list_audit_log"}}},
		{"trailing_value", "2025-06-18", call + ` {"jsonrpc":"2.0","id":8,"method":"ping"}`, true,
			[]receivedRequest{{Method: "tools/call", ID: json.RawMessage("7"), Tool: "admin_list_audit_log"}}},
		{"batch_trailing_text", "2025-03-26", "[" + call + "]xyz", true,
			[]receivedRequest{{Method: "tools/call", ID: json.RawMessage("7"), Tool: "admin_list_audit_log"}}},
		{"batch_trailing_batch", "2025-03-26", "[" + call + "] [2]", true,
			[]receivedRequest{{Method: "tools/call", ID: json.RawMessage("7"), Tool: "admin_list_audit_log"}}},
		{"json_white_space", "2025-03-26", " \t\r\n[" + call + "]\n", true,
			[]receivedRequest{{Method: "tools/call", ID: json.RawMessage("7"), Tool: "admin_list_audit_log"}}},
		{"form_feed", "2025-03-26", "\f[" + call + "]", false, []receivedRequest{{Method: "(unparseable)"}}},
		{"vertical_tab", "2025-06-18", "\v" + call, false, []receivedRequest{{Method: "(unparseable)"}}},
		{"no_break_space", "2025-03-26", "\u00a0[" + call + "]", false, []receivedRequest{{Method: "(unparseable)"}}},
		{"next_line", "2025-06-18", "\u0085" + call, false, []receivedRequest{{Method: "(unparseable)"}}},
		// The go-sdk refuses a body that nests deeper than 1000 anywhere,
		// even after its first value.
		{"too_deep_after", "2025-06-18", call + strings.Repeat("[", 1001), false, []receivedRequest{{Method: "(unparseable)"}}},
		{"deep_enough_after", "2025-06-18", call + strings.Repeat("[", 1000), true,
			[]receivedRequest{{Method: "tools/call", ID: json.RawMessage("7"), Tool: "admin_list_audit_log"}}},
		{"ideographic_space", "2025-03-26", "[" + call + "]\u3000", true,
			[]receivedRequest{{Method: "tools/call", ID: json.RawMessage("7"), Tool: "admin_list_audit_log"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res, err := http.NewRequest(http.MethodDelete, base+"/_received", nil); err != nil {
				t.Fatal(err)
			} else if r, err := http.DefaultClient.Do(res); err != nil {
				t.Fatal(err)
			} else {
				r.Body.Close()
			}
			status, answer := postVersion(t, base, tc.version, tc.body)
			if ran := status == http.StatusOK && strings.Contains(answer, `"events"`); ran != tc.ran {
				t.Fatalf("POST %q: the server answered %d %s; the test wants it to have run: %v", tc.body, status, answer, tc.ran)
			}
			got := received(t, base)
			for i := range got {
				got[i].Time = time.Time{}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("POST %q (the server ran it: %v): /_received (-want +got):\n%s", tc.body, tc.ran, d)
			}
		})
	}
}

// TestReview20cBatchTailWhiteSpace: batchTail reads a batch as
// json.Unmarshal into []json.RawMessage does, and JSON's white space is
// space, tab, line feed and carriage return only: a batch around other
// white space (a form feed, a no-break space, a line separator) is no
// batch to Unmarshal nor to the go-sdk.
func TestReview20cBatchTailWhiteSpace(t *testing.T) {
	for _, ws := range []string{"\f", "\v", "\u0085", "\u00a0", "\u2028", "\u3000", "\ufeff"} {
		for _, b := range []string{ws + `[1]`, `[1]` + ws, `[1` + ws + `]`, `[` + ws + `1]`} {
			var raws []json.RawMessage
			uerr := json.Unmarshal([]byte(b), &raws)
			got, ok := batchTail([]byte(b), 5)
			if ok != (uerr == nil) {
				t.Errorf("batchTail(%q) = %q, %v; json.Unmarshal: %v", b, got, ok, uerr)
			}
		}
	}
}

// TestReview20cBatchTailMatchesUnmarshal compares batchTail with
// json.Unmarshal on batches built from awkward members: strings with
// escaped quotes and backslashes, brackets and commas in strings, nested
// arrays and objects, every kind of JSON white space between them, and
// numbers in every spelling, each batch also cut short by one byte.
func TestReview20cBatchTailMatchesUnmarshal(t *testing.T) {
	members := []string{
		`"\\"`, `"\""`, `"\\\""`, `"\\\\"`, `"a\\\"],[{\"b"`, `"],"`, `"\u005d"`, `"\\u005d"`,
		`[[],[[]],{}]`, `{"a":{"b":[1,{"c":"]}"}]}}`, `{"\\":"\\","\"":"\""}`, `{}`, `[]`,
		`0`, `-0`, `1e400`, `-1.5E-3`, `12345678901234567890123`, `0.1e+2`, `true`, `false`, `null`,
		`"é,😀,\ud83d\ude00"`, "\"\u2028\"", `"\/"`,
	}
	spaces := []string{"", " ", "\t", "\n", "\r", " \r\n\t "}
	seen := 0
	for i := range members {
		for j := range members {
			for k, s := range spaces {
				ws := spaces[(k+i)%len(spaces)]
				b := s + "[" + ws + members[i] + s + "," + ws + members[j] + ws + "," + s + members[(i+j)%len(members)] + s + "]" + ws
				for _, in := range []string{b, strings.TrimRight(b, " \t\r\n")[:len(strings.TrimRight(b, " \t\r\n"))-1]} {
					var want []json.RawMessage
					uerr := json.Unmarshal([]byte(in), &want)
					for _, n := range []int{1, 2, 1000} {
						got, ok := batchTail([]byte(in), n)
						if ok != (uerr == nil) {
							t.Fatalf("batchTail(%q, %d) ok %v; json.Unmarshal: %v", in, n, ok, uerr)
						}
						if uerr != nil {
							continue
						}
						seen++
						w := want[max(0, len(want)-n):]
						if len(got) != len(w) {
							t.Fatalf("batchTail(%q, %d) = %q, want %q", in, n, got, w)
						}
						for x := range w {
							if !bytes.Equal(got[x], w[x]) {
								t.Fatalf("batchTail(%q, %d)[%d] = %s, want %s", in, n, x, got[x], w[x])
							}
						}
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no batch was compared")
	}
}

// TestReview20cCutKeepsCharacters: a field cut at maxField bytes ends on a
// character boundary whatever the width of the characters around the
// cut, and is valid UTF-8, at most maxField bytes before its "…".
func TestReview20cCutKeepsCharacters(t *testing.T) {
	for _, r := range []string{"é", "€", "😀"} {
		for pad := 0; pad < 4; pad++ {
			s := strings.Repeat("a", pad) + strings.Repeat(r, maxField)
			var truncated bool
			got := cut(s, &truncated)
			body, ok := strings.CutSuffix(got, "…")
			if !truncated || !ok || !utf8.ValidString(got) || len(body) > maxField || len(body) < maxField-3 || !strings.HasPrefix(s, body) {
				t.Errorf("cut(%d×a + %d×%q) = %q (%d bytes before …), truncated %v; want a valid prefix of at most %d bytes and …", pad, maxField, r, got, len(body), truncated, maxField)
			}
		}
	}
	var truncated bool
	if s := strings.Repeat("€", maxField/3) + "a"; len(s) > maxField || cut(s, &truncated) != s || truncated {
		t.Errorf("a field of %d bytes was cut", len(s))
	}
}

// TestReview20cASCIIJSONEveryClass: asciiJSON writes every character
// outside printable ASCII as an escape, and the text still reads as the
// same value, for characters of every class: C0 and C1 controls, DEL,
// format characters (bidi controls, zero-width ones, BOM), line and
// paragraph separators, marks, letters, symbols, private use, tag
// characters, and the largest code point, alone and next to ASCII.
func TestReview20cASCIIJSONEveryClass(t *testing.T) {
	var runes []rune
	for r := rune(0); r < 0x3000; r++ {
		runes = append(runes, r)
	}
	runes = append(runes, 0xfeff, 0xfffd, 0xffff, 0xe000, 0xf8ff, 0x10000, 0x1f600, 0xe0001, 0xe007f, 0x10ffff)
	for _, r := range runes {
		in := receivedRequest{Method: "m" + string(r) + "\"\\", Tool: string(r), Subject: "<" + string(r) + ">&"}
		js, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		out := asciiJSON(js)
		for i := 0; i < len(out); i++ {
			if c := out[i]; c < 0x20 || c >= 0x7f {
				t.Fatalf("asciiJSON for %U holds byte %#x: %s", r, c, out)
			}
		}
		var back receivedRequest
		if err := json.Unmarshal([]byte(out), &back); err != nil {
			t.Fatalf("asciiJSON for %U: %s does not read: %v", r, out, err)
		}
		if back.Method != in.Method || back.Tool != in.Tool || back.Subject != in.Subject {
			t.Fatalf("asciiJSON for %U reads back as %+v, want %+v", r, back, in)
		}
	}
}

// TestReview20cRingOrder: the ring lists its items oldest first, before it
// is full, once it wraps (by one, and many times over), after a clear, and
// after it wraps again.
func TestReview20cRingOrder(t *testing.T) {
	var r ring[int]
	want := func(from, to int) []int { // from..to-1
		var w []int
		for i := from; i < to; i++ {
			w = append(w, i)
		}
		return w
	}
	check := func(what string, w []int) {
		t.Helper()
		got := r.list()
		if len(w) == 0 && len(got) == 0 {
			return
		}
		if d := cmp.Diff(w, got); d != "" {
			t.Errorf("%s: list (-want +got):\n%s", what, d)
		}
	}
	check("empty", nil)
	for i := 0; i < 10; i++ {
		r.add(i)
	}
	check("10 items", want(0, 10))
	for i := 10; i < maxRecorded+1; i++ {
		r.add(i)
	}
	check("wrapped by one", want(1, maxRecorded+1))
	for i := maxRecorded + 1; i < 3*maxRecorded+7; i++ {
		r.add(i)
	}
	check("wrapped many times", want(2*maxRecorded+7, 3*maxRecorded+7))
	r.clear()
	check("cleared", nil)
	r.add(-1)
	check("one after clear", []int{-1})
	for i := 0; i < maxRecorded+2; i++ {
		r.add(i)
	}
	check("wrapped after clear", want(2, maxRecorded+2))
	l := r.list()
	l[0] = -5
	if r.list()[0] == -5 {
		t.Error("list shares the ring's items")
	}
}
