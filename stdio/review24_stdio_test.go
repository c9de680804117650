package stdio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// review24Reader is a reader whose session has negotiated a version with
// batches, its answers and its log kept.
func review24Reader() (*reader, *answerLog, *lockedBuffer) {
	s := newSession()
	s.negotiated = "2025-03-26"
	out, logs := &answerLog{}, &lockedBuffer{}
	w := newWriter(out, s)
	return newReader(io.NopCloser(strings.NewReader("")), w, s, slog.New(slog.NewTextHandler(logs, nil)), time.Second), out, logs
}

// answerLog keeps each line written to it, abbreviated ([abbrev]), so that
// keeping them allocates little beside what the transport does.
type answerLog struct {
	mu    sync.Mutex
	lines []string
}

func (a *answerLog) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, abbrev(bytes.TrimSuffix(p, []byte("\n"))))
	return len(p), nil
}

func (a *answerLog) Close() error { return nil }

func (a *answerLog) answers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.lines...)
}

// abbrev is b whole when short, else its head, its length and its tail.
func abbrev(b []byte) string {
	if len(b) <= 4096 {
		return string(b)
	}
	return fmt.Sprintf("%s...(%d bytes)...%s", b[:200], len(b), b[len(b)-200:])
}

// allocated returns the fewest bytes that f allocated in three runs (other
// goroutines of the test binary may allocate meanwhile).
func allocated(f func()) uint64 {
	least := ^uint64(0)
	for range 3 {
		runtime.GC()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		least = min(least, b.TotalAlloc-a.TotalAlloc)
	}
	return least
}

// review24Batch is a batch of n copies of member.
func review24Batch(n int, member func(i int) string) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(member(i))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// TestReview24LongBatchRefusedUnread: a batch was decoded whole, a copy of
// each member and a decoder for each, before any rule applied: a 16 MiB
// batch of "{}" cost some 100 times its size in allocations (1.7 GB, 1.2 GB
// live at once) and three seconds, to be refused at its first member; one
// of 390,000 requests was answered with an error for each (a 70 MB
// answer), and one of responses, which always passed, had the go-sdk
// decode each member (some 32 KB of garbage a message: 13 GB). A batch of
// more than maxBatch messages is now refused whole, on a count of its
// members that reads none: one -32600 answer with a null id, logged as
// other refusals are.
func TestReview24LongBatchRefusedUnread(t *testing.T) {
	for _, tt := range []struct {
		name   string
		member func(i int) string
	}{
		{"requests", func(i int) string { return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}` }},
		{"responses", func(i int) string { return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"result":{}}` }},
		{"empty_objects", func(int) string { return `{}` }},
		{"numbers", func(int) string { return `1` }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line := review24Batch(max(maxBatch+1, 256<<10/(len(tt.member(1))+1)), tt.member)
			r, out, logs := review24Reader()
			used := allocated(func() { r.line(line, false) })
			if limit := uint64(64 << 10); used > limit {
				t.Errorf("a batch of %d bytes cost %d bytes of allocations, want at most %d (it is refused unread)", len(line), used, limit)
			}
			answers := out.answers()
			want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a batch of more than 4096 messages; send fewer"}}`
			if answers[0] != want {
				t.Errorf("the answer to a batch over the bound: %.300s\nwant %s", answers[0], want)
			}
			if !strings.Contains(logs.String(), "more than 4096 messages") {
				t.Errorf("the refusal was not logged: %q", logs)
			}
			if len(r.ready) != 0 {
				t.Errorf("a batch over the bound passed %d bytes on", len(r.ready))
			}
		})
	}
	// A batch of maxBatch answers to the server's requests is still
	// passed, read in place.
	line := review24Batch(maxBatch, func(i int) string { return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"result":{}}` })
	pass, msgs, batch, lerr := checkLine(line)
	if lerr != nil || !batch || len(msgs) != maxBatch || !bytes.Equal(pass, line) {
		t.Errorf("a batch of %d responses: %d messages, error %v; want it passed whole", maxBatch, len(msgs), lerr)
	}
}

// TestReview24MessageReadInPlace: each member of a message was decoded
// through a json.Decoder and copied, and the id decoded into an any at
// each occurrence: a message of 16 MiB of small members, or of one id
// repeated, cost some 40 and 60 times its size in allocations (688 MB and
// 1 GB) and two seconds, to be passed on. The members are now read in
// place; what the check allocates no longer grows with the line.
func TestReview24MessageReadInPlace(t *testing.T) {
	const size = 1 << 20
	fill := func(member string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"ping",` + strings.TrimSuffix(strings.Repeat(member, size/len(member)), ",") + `}`)
	}
	params := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":"` + strings.Repeat("x", size/2) + `"}}`
	for _, tt := range []struct {
		name string
		line []byte
	}{
		{"many_members", fill(`"a":1,`)},
		{"repeated_id", fill(`"id":1,`)},
		{"repeated_version", fill(`"jsonrpc":"2.0",`)},
		{"repeated_error", fill(`"error":{"code":1,"message":"m"},`)},
		{"batch_of_big_params", []byte("[" + params + "," + strings.Replace(params, `"id":2`, `"id":3`, 1) + "]")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var lerr *lineError
			used := allocated(func() { _, _, _, lerr = checkLine(tt.line) })
			if lerr != nil {
				t.Fatalf("checkLine refuses the line: %d %s", lerr.code, lerr.reason)
			}
			if limit := uint64(64 << 10); used > limit {
				t.Errorf("checking a line of %d bytes cost %d bytes of allocations, want at most %d", len(tt.line), used, limit)
			}
		})
	}
}

// TestReview24LongIDCostsItsSize: a request with an id as long as its line
// had the id decoded twice and encoded once whether it was answered or not,
// and the answer encoded by encoding/json through a RawMessage (copied,
// compacted, then copied again): refusing one cost 13 times its size, and
// passing one 11 times. The id is now encoded only to answer it, by hand
// into a buffer of its size ([appendString]), and the answer written in one
// buffer of its size: 3 and 1 times.
func TestReview24LongIDCostsItsSize(t *testing.T) {
	const size = 1 << 20
	id := strings.Repeat("a", size)
	refused := []byte(`{"jsonrpc":"1.0","id":"` + id + `","method":"ping"}`)
	passed := []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"ping"}`)

	r, out, _ := review24Reader()
	used := allocated(func() { r.line(refused, false) })
	t.Logf("refused: %d bytes allocated", used)
	if limit := uint64(4 * size); used > limit {
		t.Errorf("refusing a request with an id of %d bytes cost %d bytes of allocations, want at most %d", size, used, limit)
	}
	answers := out.answers()
	want := abbrev([]byte(`{"jsonrpc":"2.0","id":"` + id + `","error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`))
	if len(answers) != 3 || answers[0] != want {
		t.Errorf("the answers to a refused request with a long id: %d lines, the first %.200s...", len(answers), answers[0])
	}

	var lerr *lineError
	used = allocated(func() {
		var msgs []info
		_, msgs, _, lerr = checkLine(passed)
		if lerr == nil {
			lerr = newSession().admit(msgs, false)
		}
	})
	if lerr != nil {
		t.Fatalf("a request with a long id refused: %s", lerr.reason)
	}
	t.Logf("passed: %d bytes allocated", used)
	if limit := uint64(2 * size); used > limit {
		t.Errorf("passing a request with an id of %d bytes cost %d bytes of allocations, want at most %d", size, used, limit)
	}
}

// TestReview24BatchAnswerMatchesEncoding: the answer to a batch refused as
// busy, written by hand now, is the encoding of its error objects, one per
// request, with each id as the go-sdk writes it.
func TestReview24BatchAnswerMatchesEncoding(t *testing.T) {
	lerr := &lineError{code: codeBusy, reason: `too many "requests"`, ids: []json.RawMessage{
		json.RawMessage(`1`), json.RawMessage(`"<a>&\u2028"`), json.RawMessage(`-1.5e3`),
	}}
	got := errorLine(lerr)
	type wire struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var want []wire
	for _, id := range lerr.ids {
		w := wire{JSONRPC: "2.0", ID: id}
		w.Error.Code, w.Error.Message = codeBusy, `server busy: too many "requests"`
		want = append(want, w)
	}
	b := encodeNoHTML(t, want)
	if string(got) != string(b) {
		t.Errorf("errorLine = %s\nwant %s", got, b)
	}
	if got, want := string(errorLine(parseError("x"))), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: x"}}`+"\n"; got != want {
		t.Errorf("errorLine = %s, want %s", got, want)
	}
}

// TestReview24ListenIDOutlivesTheLine: the members of a line are now
// slices of the input's buffer, which the reader reuses; the id of a
// subscriptions/listen call, kept to cancel it at the drain, must be a copy.
func TestReview24ListenIDOutlivesTheLine(t *testing.T) {
	s := newSession()
	line := []byte(`{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{}}`)
	_, msgs, batch, lerr := checkLine(line)
	if lerr == nil {
		lerr = s.admit(msgs, batch)
	}
	if lerr != nil {
		t.Fatal(lerr.reason)
	}
	for i := range line {
		line[i] = 'x'
	}
	if ids := s.listening(); len(ids) != 1 || string(ids[0]) != `"listen-1"` {
		t.Errorf("the listen ids after the input's buffer is reused: %q, want [\"listen-1\"]", ids)
	}
}

// TestReview24WalkAgreesWithDecoding: the walk in place reads the members
// and elements that encoding/json decodes, blanks, escapes and nesting
// included.
func TestReview24WalkAgreesWithDecoding(t *testing.T) {
	for _, text := range []string{
		`{}`, `{ }`, `[]`, `[ ]`,
		`{"a":1}`, ` { "a" : 1 , "b" : [ 1 , { "c" : "}" } ] } `,
		`{"a\"b":"\\","c\\":"\"]","\u0061":{"x":[[]]},"":null}`,
		`[1,-2.5e+3,true,false,null,"s",{"k":"v"},[[],{}]]`,
		"[\t1\r,\n2 ]",
	} {
		b := []byte(strings.TrimSpace(text))
		if b[0] == '{' {
			var want []string
			dec := json.NewDecoder(strings.NewReader(text))
			dec.Token()
			for dec.More() {
				name, _ := dec.Token()
				var v json.RawMessage
				dec.Decode(&v)
				want = append(want, name.(string)+"="+string(v))
			}
			var got []string
			members(b, func(name, v []byte) { got = append(got, string(name)+"="+string(v)) })
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("members(%s) = %q, want %q", text, got, want)
			}
			continue
		}
		var want []json.RawMessage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		var got []string
		elements(b, func(e []byte) bool { got = append(got, string(e)); return true })
		if len(got) != len(want) {
			t.Errorf("elements(%s) = %q, want %q", text, got, want)
			continue
		}
		for i := range got {
			if got[i] != string(want[i]) {
				t.Errorf("elements(%s)[%d] = %s, want %s", text, i, got[i], want[i])
			}
		}
	}
}

// encodeNoHTML encodes v as encoding/json does without HTML escaping, with
// a newline.
func encodeNoHTML(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checkAppendString fails unless appendString writes s as encoding/json
// does without HTML escaping.
func checkAppendString(t testing.TB, s string) {
	t.Helper()
	want := strings.TrimSuffix(string(encodeNoHTML(t, s)), "\n")
	if got := string(appendString([]byte("x"), s)); got != "x"+want {
		t.Errorf("appendString(%q) = %s, want %s", s, got[1:], want)
	}
}

// TestReview24AppendStringAsEncodingJSON: the echoed id and the message
// of an answer, written by hand now, are encoded as encoding/json (the
// go-sdk's encoding, without HTML escaping) encodes them, and an id of
// bytes that encode longer (an invalid byte, three; U+2028, six) costs no
// more than its encoding.
func TestReview24AppendStringAsEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "a", `<a>&'`, `"\\"`, "\x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x20\x7f",
		"\u2027\u2028\u2029\u202a", "é€😀", "\xff", "a\xffb\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\ufffd", "\xe2\x80", "\xe2\x80\xa8x",
	} {
		checkAppendString(t, s)
	}
	for c := range 256 {
		checkAppendString(t, string([]byte{byte(c)}))
		checkAppendString(t, "a"+string([]byte{byte(c)})+"\u2028")
	}
	const size = 1 << 20
	r, _, _ := review24Reader()
	for _, id := range []string{strings.Repeat(`\u2028`, size/6), strings.Repeat("\xff", size)} {
		line := []byte(`{"jsonrpc":"1.0","id":"` + id + `","method":"ping"}`)
		_, _, _, lerr := checkLine(line)
		if lerr == nil || lerr.id == nil {
			t.Fatalf("a request of jsonrpc 1.0 with a long id: %v, want refused with its id", lerr)
		}
		used := allocated(func() { r.line(line, false) })
		t.Logf("an id of %d bytes, %d encoded: %d bytes allocated", len(id), len(lerr.id), used)
		if limit := uint64(len(lerr.id)) * 8; used > limit {
			t.Errorf("refusing a request whose id of %d bytes encodes in %d cost %d bytes of allocations, want at most %d", len(id), len(lerr.id), used, limit)
		}
	}
}

// FuzzAppendString holds appendString against encoding/json.
func FuzzAppendString(f *testing.F) {
	f.Add("a<\u2028\xff\x00")
	f.Fuzz(func(t *testing.T, s string) { checkAppendString(t, s) })
}
