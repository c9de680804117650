package stdio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// review24bValues are values of each member the go-sdk decodes, with
// values of the wrong type, out of range, escaped and of invalid UTF-8.
var review24bValues = map[string][]string{
	"jsonrpc": {`"2.0"`, `"2.0"`, `"2\u002e0"`, `"\u0032.0"`, `"1.0"`, `2.0`, `null`, `true`, `"2.0 "`, `{}`},
	"id": {`1`, `-0`, `0`, `1.5`, `1e2`, `1E+2`, `-1e-400`, `1e400`, `-1e400`, `9223372036854775807`,
		`9223372036854775808`, `-9223372036854775809`, `123456789012345678901234567890`, `0.9999999999999999999`,
		`"a"`, `""`, `"\u0061"`, "\"a\xff\"", `"\ud800"`, `"\ud83d\ude00"`, `"\udc00\ud800"`, "\"\xed\xa0\x80\"",
		`"é"`, `"\u00e9"`, `"1"`, `"\u001f\b\u2028<&>"`, `"\/"`, `null`, `true`, `{}`, `[]`, `[1e400]`, `{"a":1e400}`,
		`{"1e400":1}`, `["\\",1e400]`, `["\"",2e308]`},
	"method": {`"ping"`, `"initialize"`, `"subscriptions/listen"`, `"subscriptions\/listen"`, `"\u0069nitialize"`,
		`""`, `null`, `5`, `"tools/call"`, "\"x\xff\"", `"\ud800"`, `{}`, `["ping"]`},
	"params": {`{}`, `[]`, `null`, `{"a":[1,2]}`, `"s"`, `1e400`, `{"id":2,"method":"x"}`},
	"result": {`{}`, `null`, `1`, `{"id":3}`},
	"error": {`null`, `{}`, `{"code":1}`, `{"code":"x"}`, `{"code":1.0}`, `{"code":-0}`, `{"code":1e2}`,
		`{"message":"m"}`, `{"message":5}`, `{"data":1e400}`, `{"Code":"x"}`, `{"c\u006fde":"x"}`, `"x"`, `[]`,
		`{"code":9223372036854775808}`, `{"code":null,"message":null}`, `{"code":1,"code":"x"}`,
		`{"message":"\ud800"}`, `{"data":{"code":"x"}}`},
}

// review24bNames are the member names the go-sdk decodes, first, then
// others.
var review24bNames = []string{"jsonrpc", "id", "method", "params", "result", "error", "x", "", "ids"}

// review24bName writes name as a JSON string in one of the forms a client
// may send: as is most often, else with escapes, in another case, or with
// a byte more.
func review24bName(r *rand.Rand, name string) string {
	if name == "" || r.IntN(3) > 0 {
		return `"` + name + `"`
	}
	switch r.IntN(8) {
	case 0: // one character escaped
		i := r.IntN(len(name))
		return fmt.Sprintf(`"%s\u%04x%s"`, name[:i], name[i], name[i+1:])
	case 1: // every character escaped, upper-case hex
		var b strings.Builder
		for _, c := range []byte(name) {
			fmt.Fprintf(&b, `\u%04X`, c)
		}
		return `"` + b.String() + `"`
	case 2:
		return `"` + strings.ToUpper(name[:1]) + name[1:] + `"`
	case 3:
		return `"` + strings.ToUpper(name) + `"`
	case 4:
		return `"` + name + `\u0000"`
	case 5:
		return "\"" + name + "\xff\""
	case 6:
		return `"` + name + ` "`
	default:
		return `"` + strings.Replace(name, "i", "\u0130", 1) + `"` // a Turkish capital I
	}
}

// review24bBlank is the blank between two tokens: mostly none.
func review24bBlank(r *rand.Rand) string {
	return []string{"", "", "", "", " ", "\t", "\r", " \r\t "}[r.IntN(8)]
}

// review24bMessage writes a JSON object of the members of a JSON-RPC
// message in random forms: most often a valid message's members, some of
// them left out, with others added (repeated names, names in other forms,
// values of the wrong type), in random order.
func review24bMessage(r *rand.Rand) string {
	var parts []string
	member := func(name string, values []string) {
		parts = append(parts, review24bName(r, name)+review24bBlank(r)+":"+review24bBlank(r)+values[r.IntN(len(values))])
	}
	if r.IntN(5) > 0 {
		member("jsonrpc", review24bValues["jsonrpc"][:4])
		if r.IntN(4) > 0 {
			member("id", review24bValues["id"][:30])
		}
		switch r.IntN(4) {
		case 0:
			member("result", review24bValues["result"])
		case 1:
			member("error", review24bValues["error"][:6])
		default:
			member("method", review24bValues["method"][:7])
		}
	}
	for n := r.IntN(4); n > 0; n-- {
		name := review24bNames[r.IntN(len(review24bNames))]
		values := review24bValues[name]
		if values == nil || r.IntN(10) == 0 {
			values = review24bValues[review24bNames[r.IntN(6)]]
		}
		member(name, values)
	}
	r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return "{" + review24bBlank(r) + strings.Join(parts, review24bBlank(r)+","+review24bBlank(r)) + review24bBlank(r) + "}"
}

// TestReview24bCheckAgreesWithSDK: for generated lines (single messages and
// batches, members repeated, escaped, in another case, of the wrong type,
// blanks anywhere), what the line check passes the go-sdk reads as the
// same messages (request or not, id as the SDK keys it, method), and what
// it refuses the SDK would not take.
func TestReview24bCheckAgreesWithSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	n := 6000
	if testing.Short() {
		n = 1000
	}
	for i := 0; i < n; i++ {
		var line string
		if r.IntN(4) == 0 {
			members := make([]string, 1+r.IntN(3))
			for j := range members {
				members[j] = review24bBlank(r) + review24bMessage(r) + review24bBlank(r)
			}
			line = "[" + strings.Join(members, ",") + "]"
		} else {
			line = review24bMessage(r)
		}
		line = review24bBlank(r) + line + review24bBlank(r)
		agreeWithSDK(t, []byte(line))
		if t.Failed() {
			t.Fatalf("line %d: %q", i, line)
		}
	}
}

// review24bAgreeOnMessage fails unless checkMessage reads obj, one JSON
// object, as jsonrpc.DecodeMessage of the go-sdk does: it refuses what the
// SDK cannot decode, and of what it passes it reads whether it is a
// request, its id as the SDK keys it, and its method.
func review24bAgreeOnMessage(t *testing.T, obj string) {
	t.Helper()
	got, lerr := checkMessage([]byte(obj))
	if lerr != nil {
		review24bAnswerAsEncoded(t, lerr)
	}
	msg, err := jsonrpc.DecodeMessage([]byte(obj))
	switch {
	case lerr != nil && err != nil:
		return
	case lerr != nil && strings.HasSuffix(lerr.reason, reasonInexactID):
		// Refused on purpose: the SDK would answer the id changed
		// (exactIntID, tested on its own).
		return
	case lerr != nil:
		t.Errorf("checkMessage refuses %q (%s), the go-sdk decodes it", obj, lerr.reason)
		return
	case err != nil:
		t.Errorf("checkMessage passes %q, the go-sdk cannot decode it: %v", obj, err)
		return
	}
	var want info
	switch m := msg.(type) {
	case *jsonrpc.Request:
		want = info{request: true, method: m.Method, id: keyOf(m.ID)}
	case *jsonrpc.Response:
		want = info{id: keyOf(m.ID)}
	}
	if got.request != want.request || got.id != want.id || got.method != want.method {
		t.Errorf("%q: checkMessage reads request %v, id %+v, method %q; the go-sdk request %v, id %+v, method %q",
			obj, got.request, got.id, got.method, want.request, want.id, want.method)
	}
}

// review24bAnswerAsEncoded fails unless errorLine writes the answer to
// lerr as encoding/json writes it without HTML escaping (as the go-sdk
// writes its messages), the id as the SDK would write it: a string id
// encoded anew, a number as read.
func review24bAnswerAsEncoded(t *testing.T, lerr *lineError) {
	t.Helper()
	id := json.RawMessage("null")
	if lerr.id != nil {
		id = lerr.id
		if lerr.key.isStr {
			id = encodeNoHTML(t, lerr.key.s)
		}
	}
	type wireError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	want := encodeNoHTML(t, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", bytes.TrimSuffix(id, []byte("\n")), wireError{lerr.code, "invalid request: " + lerr.reason}})
	if got := errorLine(lerr); !bytes.Equal(got, want) {
		t.Errorf("errorLine = %s, want %s", got, want)
	}
}

// TestReview24bMessageAgreesWithDecodeMessage: for generated objects and
// the forms that could make the walk in place read a member the go-sdk
// does not, or miss one it reads (escaped names, names in another case,
// with a NUL or an invalid byte, repeated names, blanks, numbers the SDK
// reads as another id or cannot read, ids and methods of invalid UTF-8
// or lone surrogates), checkMessage agrees with jsonrpc.DecodeMessage; the
// answer to a message it refuses is as encoding/json writes it.
func TestReview24bMessageAgreesWithDecodeMessage(t *testing.T) {
	for _, obj := range []string{
		`{"jsonrpc":"2.0","\u0069d":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","\u0069\u0064":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","ID":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","Id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"ping"}`,
		`{"JsonRpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"meth\u006fd":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"meth\u006Fd":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\xff\":1,\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","id\u0000":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","i\u0064\u0000":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id ":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","\u0130d":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"id":"1","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"1","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"\u0069d":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","m\u0065thod":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"initialize"}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"\u006dethod":""}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xff\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"ping\"}",
		`{"jsonrpc":"2.0","id":"a\ud800","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\udc00\ud800","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\uD83D\uDE00","method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xffng\"}",
		`{"jsonrpc":"2.0","id":1,"method":"pi\ud800ng"}`,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions\/listen"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":0.9999999999999999999,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e19,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e308,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e309,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e-400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4.9e-324,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1E+2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":[1e400],"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":[1,{"b":2e308}]},"id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":["\\",1e400],"id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":["\"]",1e400],"id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{"1e400":"1e400"},"id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","error":{"code":1,"code":null}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":-0}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":-9223372036854775808}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":9223372036854775808}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"Code":"x","MESSAGE":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"c\u006fde":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"data":1e400}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"message":"\ud800"}}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"e\u0072ror":5}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"Error":5}`,
		`{"jsonrpc":"2\u002e0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0\u0000","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","jsonrpc":null}`,
		"{ \"jsonrpc\" :\t\"2.0\" ,\r\"id\"\r:\r1\t,\"method\" : \"x\" }",
		`{"jsonrpc":"2.0","id":1,"method":"x","params":1e400}`,
	} {
		review24bAgreeOnMessage(t, obj)
	}
	r := rand.New(rand.NewPCG(24, 3))
	for i := 0; i < 20000; i++ {
		review24bAgreeOnMessage(t, review24bMessage(r))
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestReview24bLongBatchCountsEveryMessage pins what the docs now say of
// the bound on a batch's messages (59f37b9): it counts the batch's answers
// to the server's requests and its notifications with its requests, and a
// batch over it is refused whole, its answers with it. Before, only
// requests counted: 4096 requests and an answer passed with none in
// flight, and the answers of a batch of too many requests were passed on.
func TestReview24bLongBatchCountsEveryMessage(t *testing.T) {
	line := review24Batch(maxBatch+1, func(i int) string {
		if i == maxBatch {
			return `{"jsonrpc":"2.0","id":"s-1","result":{}}`
		}
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}`
	})
	r, out, _ := review24Reader()
	r.line(line, false)
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a batch of more than 4096 messages; send fewer"}}`
	if got := out.answers(); len(got) != 1 || got[0] != want {
		t.Errorf("the answer to 4096 requests and an answer in one batch: %.300q, want [%s]", got, want)
	}
	if len(r.ready) != 0 {
		t.Errorf("passed %.100q, want nothing (the answer is refused with the batch)", r.ready)
	}
	if n, _ := r.s.unanswered(); n != 0 {
		t.Errorf("%d requests in flight, want 0", n)
	}
}
