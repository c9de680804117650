package stdio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// checkLineCases are lines with the verdict of the line check: 0 (passed),
// or the code of the error that answers it, and the id of that answer.
var checkLineCases = []struct {
	name   string
	line   string
	code   int
	echoID string // for a refused line: the id of the answer, "" for null
}{
	{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, ""},
	{"string_id", `{"jsonrpc":"2.0","id":"a","method":"ping"}`, 0, ""},
	// The go-sdk would answer these with another id (1, and int64's
	// conversion of 1.2e29): refused on purpose (exactIntID).
	{"fraction_id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "1.5"},
	{"huge_id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, -32600, "123456789012345678901234567890"},
	{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, ""},
	{"null_id_notification", `{"jsonrpc":"2.0","id":null,"method":"n"}`, 0, ""},
	{"null_method", `{"jsonrpc":"2.0","id":1,"method":null}`, 0, ""},
	{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, 0, ""},
	{"error_response", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x","data":[1]}}`, 0, ""},
	{"null_error", `{"jsonrpc":"2.0","id":1,"error":null}`, 0, ""},
	{"empty_error", `{"jsonrpc":"2.0","id":1,"error":{}}`, 0, ""},
	{"wrong_case_member_ignored", `{"jsonrpc":"2.0","id":1,"error":{"Code":"x"}}`, 0, ""},
	{"escaped_version", `{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`, 0, ""},
	{"last_duplicate_wins", `{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"ping"}`, 0, ""},
	{"leading_blanks", " \t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, ""},
	{"crlf", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r", 0, ""},
	{"trailing_space_trimmed", `{"jsonrpc":"2.0","id":1,"method":"ping"}  `, 0, ""},
	{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"},{"jsonrpc":"2.0","id":1,"result":{}}]`, 0, ""},
	{"blank", "  \r", 0, ""},

	{"not_json", `{not json`, codeParseError, ""},
	{"trailing_data", `{"jsonrpc":"2.0","id":5,"method":"ping"} x`, codeParseError, ""},
	{"two_messages", `{"jsonrpc":"2.0","id":5,"method":"ping"}{"jsonrpc":"2.0","id":6,"method":"ping"}`, codeParseError, ""},
	{"bad_escape", `{"jsonrpc":"2.0","id":1,"method":"x","params":"\x"}`, codeParseError, ""},
	{"leading_zero", `{"jsonrpc":"2.0","id":01,"method":"ping"}`, codeParseError, ""},
	{"number", `42`, codeInvalidRequest, ""},
	{"string", `"ping"`, codeInvalidRequest, ""},
	{"null", `null`, codeInvalidRequest, ""},
	{"empty_object", `{}`, codeInvalidRequest, ""},
	{"version_1_0", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, codeInvalidRequest, "5"},
	{"version_number", `{"jsonrpc":2.0,"id":"x","method":"ping"}`, codeInvalidRequest, `"x"`},
	{"version_wrong_case", `{"JSONRPC":"2.0","id":5,"method":"ping"}`, codeInvalidRequest, "5"},
	{"object_id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, codeInvalidRequest, ""},
	{"bool_id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, codeInvalidRequest, ""},
	{"id_out_of_range", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, codeInvalidRequest, ""},
	{"method_number", `{"jsonrpc":"2.0","id":5,"method":5}`, codeInvalidRequest, "5"},
	{"response_without_id", `{"jsonrpc":"2.0","result":{}}`, codeInvalidRequest, ""},
	{"response_bad_version_no_echo", `{"jsonrpc":"1.0","id":5,"result":{}}`, codeInvalidRequest, ""},
	{"error_string", `{"jsonrpc":"2.0","id":1,"error":"x"}`, codeInvalidRequest, ""},
	{"error_code_fraction", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}`, codeInvalidRequest, ""},
	{"error_code_exponent", `{"jsonrpc":"2.0","id":1,"error":{"code":1e3}}`, codeInvalidRequest, ""},
	{"error_code_overflow", `{"jsonrpc":"2.0","id":1,"error":{"code":99999999999999999999}}`, codeInvalidRequest, ""},
	{"error_message_number", `{"jsonrpc":"2.0","id":1,"error":{"message":5}}`, codeInvalidRequest, ""},
	{"empty_batch", `[]`, codeInvalidRequest, ""},
	{"batch_of_number", `[1]`, codeInvalidRequest, ""},
	{"batch_bad_member", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"1.0","id":2,"method":"ping"}]`, codeInvalidRequest, ""},
	{"batch_duplicate_id", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1.2,"method":"ping"}]`, codeInvalidRequest, ""},
	{"batch_two_notifications", `[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`, codeInvalidRequest, ""},
	{"batch_request_and_notification", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]`, codeInvalidRequest, ""},

	// Repeated members: every occurrence is decoded, the last one counts.
	{"dup_version_null_last", `{"jsonrpc":"2.0","jsonrpc":null,"id":1,"method":"ping"}`, 0, ""},
	{"dup_version_null_first", `{"jsonrpc":null,"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, ""},
	{"dup_id_object_then_number", `{"jsonrpc":"2.0","id":{},"id":2,"method":"ping"}`, 0, ""},
	{"dup_id_null_last", `{"jsonrpc":"2.0","id":1,"id":null,"method":"n"}`, 0, ""},
	{"dup_method_number_first", `{"jsonrpc":"2.0","id":1,"method":5,"method":"ping"}`, 0, ""},
	{"dup_method_null_last", `{"jsonrpc":"2.0","id":1,"method":"ping","method":null}`, 0, ""},
	{"dup_error_null_first", `{"jsonrpc":"2.0","id":1,"error":null,"error":{"code":1}}`, 0, ""},
	{"dup_error_null_last", `{"jsonrpc":"2.0","id":1,"error":{"code":1},"error":null}`, 0, ""},
	{"escaped_member_name", `{"json\u0072pc":"2.0","id":1,"method":"ping"}`, 0, ""},
	{"dup_version_number_first", `{"jsonrpc":5,"jsonrpc":"2.0","id":1,"method":"ping"}`, codeInvalidRequest, "1"},
	{"dup_version_bool_last", `{"jsonrpc":"2.0","jsonrpc":true,"id":1,"method":"ping"}`, codeInvalidRequest, "1"},
	{"dup_id_out_of_range_first", `{"jsonrpc":"2.0","id":1e400,"id":1,"method":"ping"}`, codeInvalidRequest, ""},
	{"dup_id_nested_out_of_range", `{"jsonrpc":"2.0","id":[1e400],"id":1,"method":"ping"}`, codeInvalidRequest, ""},
	{"dup_id_bool_last", `{"jsonrpc":"2.0","id":1,"id":true,"method":"ping"}`, codeInvalidRequest, ""},
	{"dup_method_number_last", `{"jsonrpc":"2.0","id":1,"method":"ping","method":5}`, codeInvalidRequest, "1"},
	{"dup_error_number_first", `{"jsonrpc":"2.0","id":1,"error":5,"error":null}`, codeInvalidRequest, ""},
	{"dup_error_bad_code_first", `{"jsonrpc":"2.0","id":1,"error":{"code":"x"},"error":{}}`, codeInvalidRequest, ""},
	{"dup_error_code", `{"jsonrpc":"2.0","id":1,"error":{"code":"x","code":1}}`, codeInvalidRequest, ""},
	{"dup_error_message", `{"jsonrpc":"2.0","id":1,"error":{"message":5,"message":"x"}}`, codeInvalidRequest, ""},
	{"batch_dup_member", `[{"jsonrpc":5,"jsonrpc":"2.0","id":1,"method":"ping"}]`, codeInvalidRequest, ""},
	{"too_deep", `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, codeInvalidRequest, "1"},
}

// check runs the line check of a fresh session on line.
func check(line []byte) (pass []byte, msgs []info, lerr *lineError) {
	pass, msgs, batch, lerr := checkLine(line)
	if lerr == nil && pass != nil {
		lerr = newSession().admit(msgs, batch)
	}
	return pass, msgs, lerr
}

func TestCheckLine(t *testing.T) {
	for _, tt := range checkLineCases {
		t.Run(tt.name, func(t *testing.T) {
			_, _, lerr := check([]byte(tt.line))
			code, id := 0, ""
			if lerr != nil {
				code, id = lerr.code, string(lerr.id)
			}
			if code != tt.code || id != tt.echoID {
				t.Errorf("check(%q) = code %d id %q, want code %d id %q", tt.line, code, id, tt.code, tt.echoID)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }

// sdkRead returns the messages that the go-sdk's stdio connection reads
// from data before end of file, or the error that would end its session.
func sdkRead(t testing.TB, data []byte) ([]jsonrpc.Message, error) {
	t.Helper()
	conn, err := (&mcp.IOTransport{Reader: io.NopCloser(bytes.NewReader(data)), Writer: discard{}}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var msgs []jsonrpc.Message
	for {
		m, err := conn.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return msgs, nil
		}
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
	}
}

// agreeWithSDK fails unless the line check agrees with the go-sdk on line:
// what it passes, the SDK reads as the same messages; what it refuses
// would end the SDK's session.
func agreeWithSDK(t testing.TB, line []byte) {
	t.Helper()
	pass, infos, lerr := check(line)
	if lerr != nil {
		msgs, err := sdkRead(t, append(bytes.Clone(line), '\n'))
		if err == nil && mixedBatch(msgs) {
			// The SDK reads a batch of requests and notifications but
			// never answers it: refused on purpose.
			return
		}
		if err == nil && strings.HasSuffix(lerr.reason, reasonInexactID) {
			// A request whose number id the SDK would answer changed:
			// refused on purpose (exactIntID, tested on its own).
			return
		}
		if err == nil && bytes.IndexByte(line, '\r') >= 0 && lerr.code == codeParseError {
			// Values separated by a carriage return: the SDK reads them as
			// messages on one line, the check refuses the line. Known.
			return
		}
		if err == nil {
			t.Errorf("check refuses %q (%d %s), but the go-sdk reads it as %d messages", line, lerr.code, lerr.reason, len(msgs))
		}
		return
	}
	if pass == nil {
		if len(bytes.Trim(line, " \t\r")) != 0 {
			t.Errorf("check passes nothing of the non-blank line %q", line)
		}
		return
	}
	if !bytes.Equal(pass, bytes.Trim(line, " \t\r")) {
		t.Errorf("check passes %q for %q, want the line without the blanks around it", pass, line)
	}
	msgs, err := sdkRead(t, append(bytes.Clone(pass), '\n'))
	if err != nil {
		t.Errorf("check passes %q, but the go-sdk refuses it: %v", pass, err)
		return
	}
	if len(msgs) != len(infos) {
		t.Fatalf("check passes %q as %d messages, the go-sdk reads %d", pass, len(infos), len(msgs))
	}
	for i, m := range msgs {
		var want info
		switch m := m.(type) {
		case *jsonrpc.Request:
			want = info{request: true, method: m.Method, id: keyOf(m.ID)}
		case *jsonrpc.Response:
			want = info{id: keyOf(m.ID)}
		}
		got := infos[i]
		if got.request != want.request || got.method != want.method || got.id != want.id {
			t.Errorf("message %d of %q: check sees %+v, the go-sdk %+v", i, pass, got, want)
		}
	}
}

// mixedBatch reports whether msgs hold both a request with an id and a
// notification.
func mixedBatch(msgs []jsonrpc.Message) bool {
	calls, notifications := false, false
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); ok {
			calls = calls || r.ID.IsValid()
			notifications = notifications || !r.ID.IsValid()
		}
	}
	return calls && notifications
}

func keyOf(id jsonrpc.ID) idKey {
	switch v := id.Raw().(type) {
	case int64:
		return idKey{set: true, n: v}
	case string:
		return idKey{set: true, isStr: true, s: v}
	}
	return idKey{}
}

// TestCheckLineAgreesWithSDK holds the table of TestCheckLine against the
// go-sdk's own reading of each line.
func TestCheckLineAgreesWithSDK(t *testing.T) {
	for _, tt := range checkLineCases {
		t.Run(tt.name, func(t *testing.T) { agreeWithSDK(t, []byte(tt.line)) })
	}
}

// FuzzCheckLine holds the line check against the go-sdk on any line.
func FuzzCheckLine(f *testing.F) {
	for _, tt := range checkLineCases {
		f.Add([]byte(tt.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			t.Skip("one line only")
		}
		agreeWithSDK(t, line)
	})
}
