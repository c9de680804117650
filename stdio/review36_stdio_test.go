package stdio

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// review36NumberCases are lines at the edges of what the go-sdk decodes:
// the deepest nesting it takes, and ids whose numbers start with the
// lowest and the highest digit, in and out of float64 range. code is 0
// for a line that passes, else the code of the error that answers it.
var review36NumberCases = []struct {
	name string
	line string
	code int
}{
	{"depth_1000", `{"jsonrpc":"2.0","id":1,"method":"x","params":` +
		strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`, 0},
	// In float64 range, but beyond 2^53: the go-sdk would answer it with
	// another id (exactIntID).
	{"id_zero_point_in_range", `{"jsonrpc":"2.0","id":0.01e309,"method":"ping"}`, codeInvalidRequest},
	{"id_zero_point_exact", `{"jsonrpc":"2.0","id":0.01e15,"method":"ping"}`, 0},
	{"id_nested_zero_point_in_range", `{"jsonrpc":"2.0","id":[0.01e309],"id":1,"method":"ping"}`, 0},
	{"id_nine_out_of_range", `{"jsonrpc":"2.0","id":9e400,"method":"ping"}`, codeInvalidRequest},
	{"id_nested_nine_out_of_range", `{"jsonrpc":"2.0","id":[9e400],"id":1,"method":"ping"}`, codeInvalidRequest},
}

// TestReview36NumberEdges pins the line check at the go-sdk's own edges:
// a message nested exactly 1000 levels deep is the SDK's to take (it
// refuses from 1001), and a number is refused only when it is out of
// float64 range, whatever digit it starts with. A check one off either way
// refuses a message the server would serve, or passes one that ends the
// session.
func TestReview36NumberEdges(t *testing.T) {
	for _, tt := range review36NumberCases {
		t.Run(tt.name, func(t *testing.T) {
			_, _, lerr := check([]byte(tt.line))
			code := 0
			if lerr != nil {
				code = lerr.code
			}
			if code != tt.code {
				t.Errorf("check(%.80q) = code %d, want %d", tt.line, code, tt.code)
			}
			agreeWithSDK(t, []byte(tt.line))
		})
	}
}

// TestReview36ParseIDOutOfRange pins parseID's refusal of a number id out
// of float64 range, which the go-sdk cannot decode: the session matches the
// SDK's answers and cancellations to requests through parseID, and such an
// id must match none (on amd64 it would convert to the id -1<<63).
func TestReview36ParseIDOutOfRange(t *testing.T) {
	for _, raw := range []string{`1e400`, `-1e400`, `9e999`} {
		if k, ok := parseID(json.RawMessage(raw)); ok {
			t.Errorf("parseID(%s) = %+v, true; want false", raw, k)
		}
	}
}

// TestReview36OneRequestBatchAnsweredAsBatch pins that a batch of one
// request, refused whole (here after the stop), is answered with a batch
// of one error carrying the request's id: a client that sent a batch waits
// for a batch answer, and a lone object (or a stray bracket) leaves its
// request unanswered.
func TestReview36OneRequestBatchAnsweredAsBatch(t *testing.T) {
	s := newSession()
	s.stopping()
	pass, msgs, batch, lerr := checkLine([]byte(`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`))
	if lerr != nil || pass == nil {
		t.Fatalf("checkLine refused a one-request batch: %+v", lerr)
	}
	lerr = s.admit(msgs, batch)
	if lerr == nil {
		t.Fatal("admit passed a batch after the stop")
	}
	line := errorLine(lerr)
	var got []struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("answer %q is not a JSON array: %v", line, err)
	}
	type ans struct {
		ID   string
		Code int
	}
	var gotAns []ans
	for _, a := range got {
		gotAns = append(gotAns, ans{string(a.ID), a.Error.Code})
	}
	if diff := cmp.Diff([]ans{{"7", codeClosing}}, gotAns); diff != "" {
		t.Errorf("answer %q (-want +got):\n%s", line, diff)
	}
}

// review36Admit passes line through the line check and the session's
// admission, as the reader does, and returns the refusal or nil.
func review36Admit(t *testing.T, s *session, line string) *lineError {
	t.Helper()
	pass, msgs, batch, lerr := checkLine([]byte(line))
	if lerr != nil || pass == nil {
		t.Fatalf("checkLine(%s) refused: %+v", line, lerr)
	}
	return s.admit(msgs, batch)
}

// TestReview36NoBatchFromVersion20250618 pins that batches are refused
// once initialize is answered with 2025-06-18 itself, the first protocol
// version without them: the go-sdk ends the session on a batch at that
// version, so the bound must be inclusive.
func TestReview36NoBatchFromVersion20250618(t *testing.T) {
	for _, tt := range []struct {
		version string
		ok      bool
	}{
		{"2025-03-26", true},
		{"2025-06-18", false},
		{"2025-11-25", false},
	} {
		t.Run(tt.version, func(t *testing.T) {
			s := newSession()
			init := `{"jsonrpc":"2.0","id":1,"method":"initialize",` +
				`"params":{"protocolVersion":"` + tt.version + `"}}`
			if e := review36Admit(t, s, init); e != nil {
				t.Fatalf("initialize refused: %s", e.reason)
			}
			s.sent([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"` + tt.version + `"}}`))
			e := review36Admit(t, s, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
			if (e == nil) != tt.ok {
				t.Errorf("batch at %s: refusal %+v, want admitted %t", tt.version, e, tt.ok)
			}
		})
	}
}

// TestReview36BytesBoundExact pins the bound of bytes in flight at its
// edge, for a single request and for a batch: requests that bring the
// bytes in flight to exactly maxBytes pass, one byte more is refused as
// busy. The bound is documented as "at most"; off by one it refuses what
// the server was sized to take.
func TestReview36BytesBoundExact(t *testing.T) {
	const (
		first  = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		second = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
		third  = `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	)
	for _, tt := range []struct {
		name string
		line string
		size int // bytes of its requests, as read
	}{
		{"single", second, len(second)},
		{"batch", "[" + second + "," + third + "]", len(second) + len(third)},
	} {
		for _, slack := range []int{0, -1} {
			s := newSession()
			s.maxBytes = len(first) + tt.size + slack
			if e := review36Admit(t, s, first); e != nil {
				t.Fatalf("first request refused: %s", e.reason)
			}
			e := review36Admit(t, s, tt.line)
			if slack == 0 && e != nil {
				t.Errorf("%s: bytes in flight reaching maxBytes exactly: refused %q, want passed",
					tt.name, e.reason)
			}
			if slack < 0 && (e == nil || e.code != codeBusy) {
				t.Errorf("%s: bytes in flight one over maxBytes: refusal %+v, want code %d",
					tt.name, e, codeBusy)
			}
		}
	}
}

// TestReview36InFlightBoundExact pins the bound of requests in flight at
// its edge: the request that makes exactly maxInFlight in flight passes,
// the next is refused as busy. Off by one, a server sized for n concurrent
// calls would serve only n-1.
func TestReview36InFlightBoundExact(t *testing.T) {
	s := newSession()
	s.maxInFlight = 2
	for id := 1; id <= 2; id++ {
		line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"ping"}`
		if e := review36Admit(t, s, line); e != nil {
			t.Fatalf("request %d of %d refused: %s", id, s.maxInFlight, e.reason)
		}
	}
	e := review36Admit(t, s, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if e == nil || e.code != codeBusy {
		t.Errorf("request beyond maxInFlight: refusal %+v, want code %d", e, codeBusy)
	}
}

// TestReview36WriterTakesBlankLine pins that a blank line written through
// the writer is passed on and read as no message: the writer reads every
// line it is given to track answers, and one without a byte must not be
// indexed.
func TestReview36WriterTakesBlankLine(t *testing.T) {
	out := &lockedBuffer{}
	w := newWriter(out, newSession())
	for _, p := range []string{"\n", " \n", "\r\n"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", p, n, err, len(p))
		}
	}
	if got := out.String(); got != "\n \n\r\n" {
		t.Errorf("output %q, want the blank lines as written", got)
	}
}

// TestReview36NullIDAnswerKeepsBatchTracking pins that an answer of the
// go-sdk's with a null id answers nothing: a notification in a batch is
// tracked by the SDK as the empty id for good (go-sdk v1.8.0), and a later
// batch with a notification ends the session, so the null id must not
// clear that tracking.
func TestReview36NullIDAnswerKeepsBatchTracking(t *testing.T) {
	s := newSession()
	const batch = `[{"jsonrpc":"2.0","method":"notifications/progress"}]`
	if e := review36Admit(t, s, batch); e != nil {
		t.Fatalf("first batch refused: %s", e.reason)
	}
	s.sent([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`))
	if e := review36Admit(t, s, batch); e == nil {
		t.Error("a second batch with a notification passed after an answer with a null id")
	}
}

// TestReview36AnswerForgetsRequest pins that the answer to a request
// leaves nothing of it in the session: its size (else a long session with
// distinct ids grows without bound) and, for subscriptions/listen, its id
// (else the drain cancels a call that is over).
func TestReview36AnswerForgetsRequest(t *testing.T) {
	s := newSession()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{}}`,
	} {
		if e := review36Admit(t, s, line); e != nil {
			t.Fatalf("%s refused: %s", line, e.reason)
		}
	}
	if got := len(s.listening()); got != 1 {
		t.Fatalf("listening() holds %d ids before the answer, want 1", got)
	}
	s.sent([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	s.sent([]byte(`{"jsonrpc":"2.0","id":"l","result":{}}`))
	if n, _ := s.unanswered(); n != 0 {
		t.Errorf("unanswered() = %d after both answers, want 0", n)
	}
	if ids := s.listening(); len(ids) != 0 {
		t.Errorf("listening() = %q after the listen call was answered, want none", ids)
	}
	s.mu.Lock()
	sizes, bytes := len(s.sizes), s.bytes
	s.mu.Unlock()
	if sizes != 0 || bytes != 0 {
		t.Errorf("after both answers: %d sizes kept, %d bytes in flight; want 0, 0", sizes, bytes)
	}
}

// TestReview36LinesLimitEdges pins the line splitter at its limit, in
// every way a line can arrive: a line of exactly max bytes is a line, one
// byte more is too long, whether whole in one chunk, split over chunks or
// left without a newline at the end of the stream; and the tail of a line
// that outgrew max is never taken for a line of its own (a client could
// otherwise smuggle a message past the length check). A last line of one
// byte is still a line.
func TestReview36LinesLimitEdges(t *testing.T) {
	const tooLong = "<too long>"
	for _, tt := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"exact_one_chunk", []string{"12345678\n"}, []string{"12345678"}},
		{"exact_split", []string{"1234", "5678", "\n"}, []string{"12345678"}},
		{"exact_last", []string{"12345678"}, []string{"12345678"}},
		{"over_one_chunk", []string{"123456789\nok\n"}, []string{tooLong, "ok"}},
		{"over_split", []string{"1234", "56789", "\nok\n"}, []string{tooLong, "ok"}},
		{"over_then_short_tail", []string{"123456789", "ab\n", "ok\n"}, []string{tooLong, "ok"}},
		{"over_then_tail_chunks", []string{"123456789", "a", "b", "\n"}, []string{tooLong}},
		{"over_last", []string{"123456789"}, []string{tooLong}},
		{"over_last_split", []string{"12345", "6789", "x"}, []string{tooLong}},
		{"one_byte_last", []string{"5"}, []string{"5"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := lines{max: 8}
			var got []string
			fn := func(b []byte, over bool) {
				if over {
					got = append(got, tooLong)
					return
				}
				got = append(got, string(b))
			}
			for _, c := range tt.chunks {
				l.feed([]byte(c), fn)
				if len(l.partial) > l.max {
					t.Errorf("after %q: %d bytes held, more than max %d", c, len(l.partial), l.max)
				}
			}
			l.flush(fn)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines of %q (-want +got):\n%s", tt.chunks, diff)
			}
		})
	}
}

// TestReview36CancelInBatchForgetsAsk pins that a notifications/cancelled
// written as a member of a batch gives up the server's request it names,
// as one on a line of its own does: the reader answers every request still
// asked when the input ends, and must not answer one the server gave up.
func TestReview36CancelInBatchForgetsAsk(t *testing.T) {
	s := newSession()
	s.sent([]byte(`{"jsonrpc":"2.0","id":5,"method":"roots/list"}`))
	s.sent([]byte(`{"jsonrpc":"2.0","id":6,"method":"roots/list"}`))
	s.sent([]byte(`[{"jsonrpc":"2.0","id":9,"result":{}},` +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}]`))
	var ids []string
	for _, a := range s.takeAsked() {
		ids = append(ids, string(a.id))
	}
	if diff := cmp.Diff([]string{"5"}, ids); diff != "" {
		t.Errorf("asks left (-want +got):\n%s", diff)
	}
}

// TestReview36WriterOneByteKeepsLineWhole pins that the transport's
// answers wait while the go-sdk's line is cut, from its first byte to its
// newline, and are all written, in order, once it ends: an answer written
// inside the SDK's line would be spliced into its message, and one dropped
// leaves a client waiting.
func TestReview36WriterOneByteKeepsLineWhole(t *testing.T) {
	out := &lockedBuffer{}
	w := newWriter(out, newSession())
	const (
		a = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a"}}` + "\n"
		b = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"b"}}` + "\n"
	)
	parts := []string{"{", `"jsonrpc":"2.0",`, `"id":1,"result":{}}` + "\n"}
	if _, err := w.Write([]byte(parts[0])); err != nil {
		t.Fatal(err)
	}
	w.answer([]byte(a))
	w.answer([]byte(b))
	for i, p := range parts[1:] {
		if got, want := out.String(), strings.Join(parts[:i+1], ""); got != want {
			t.Fatalf("output %q inside the go-sdk's line, want %q", got, want)
		}
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), strings.Join(parts, "")+a+b; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// review36Script is an output whose writes take, in turn, the bytes of
// takes (-1: all) and fail with errors.New("gone") when they take fewer;
// once takes runs out, every write takes all.
type review36Script struct {
	lockedBuffer
	takes []int
}

func (o *review36Script) Write(p []byte) (int, error) {
	k := -1
	if len(o.takes) > 0 {
		k, o.takes = o.takes[0], o.takes[1:]
	}
	if k < 0 || k >= len(p) {
		return o.lockedBuffer.Write(p)
	}
	o.lockedBuffer.Write(p[:k])
	return k, errors.New("gone")
}

// TestReview36WriterAnswerFailures pins what a failed write of one of the
// transport's answers costs: one that wrote nothing loses that answer
// alone, and the next is written; one that wrote part of its line leaves
// the output cut, so no later answer is written after the cut.
func TestReview36WriterAnswerFailures(t *testing.T) {
	const (
		a = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a"}}` + "\n"
		b = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"b"}}` + "\n"
	)
	for _, tt := range []struct {
		name string
		take int // bytes the first write takes before it fails
		want string
	}{
		{"nothing_written", 0, b},
		{"one_byte_written", 1, a[:1]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := &review36Script{takes: []int{tt.take}}
			w := newWriter(out, newSession())
			w.answer([]byte(a))
			w.answer([]byte(b))
			if got := out.String(); got != tt.want {
				t.Errorf("output %q, want %q", got, tt.want)
			}
		})
	}
}

// review36Gone is an output whose every write fails with nothing written.
type review36Gone struct{}

func (review36Gone) Write([]byte) (int, error) { return 0, errors.New("gone") }
func (review36Gone) Close() error              { return nil }

// TestReview36WriterOutputGone pins the writer on an output that takes
// nothing: the go-sdk's write returns the output's error with 0 bytes,
// and the writer neither fails itself nor tries the transport's answers
// after it (the output is taken for gone).
func TestReview36WriterOutputGone(t *testing.T) {
	w := newWriter(review36Gone{}, newSession())
	n, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	if n != 0 || err == nil {
		t.Errorf("Write = %d, %v; want 0 and the output's error", n, err)
	}
	w.answer([]byte("{}\n"))
	if !w.broken {
		t.Error("the writer still takes answers after a failed write of the go-sdk's")
	}
}
