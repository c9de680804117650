package stdio

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpguard/mcpguard/internal/jsondepth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The JSON-RPC 2.0 error codes of a refused line. codeBusy, from the
// range JSON-RPC leaves to servers, is mcpguard's code for a cap (as
// RATE_LIMIT_EXCEEDED is in protocol-error mode); codeClosing is the
// go-sdk's own for a request that comes while its session is closing
// (jsonrpc2.ErrServerClosing, "server is closing").
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeBusy           = -32029
	codeClosing        = -32004
)

// maxLine is the longest JSON value of an input line passed to the go-sdk:
// its newline too must fit in the SDK's frame limit. A line whose value is
// longer is refused.
const maxLine = mcp.DefaultMaxLineLength - 1

// lineSlack is how many bytes of blanks (a CRLF line's '\r' among them) an
// input line may carry beyond maxLine. They are not passed on, so they do
// not count against the go-sdk's frame limit; a line longer than
// maxLine+lineSlack is refused unread.
const lineSlack = 64

// maxDepth is the go-sdk's nesting limit for one message.
const maxDepth = 1000

// idKey is a JSON-RPC id as the go-sdk compares ids: a string, or a number
// truncated to an int64. The zero idKey is no id (absent or null).
type idKey struct {
	set   bool
	isStr bool
	s     string
	n     int64
}

// parseID reads raw, the value of an "id" member, as the go-sdk does; ok
// is false for a type the SDK refuses (bool, object, array, a number out of
// float64 range).
func parseID(raw json.RawMessage) (k idKey, ok bool) {
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return idKey{}, true
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return idKey{}, false
		}
		return idKey{set: true, isStr: true, s: s}, true
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return idKey{}, false
		}
		return idKey{set: true, n: int64(f)}, true
	}
	return idKey{}, false
}

// info is what the transport needs to know of one message that passed.
type info struct {
	request bool // it has a method: a request or a notification
	id      idKey
	echo    json.RawMessage // the id to answer a request with; nil: null
	rawID   json.RawMessage // the id as read (its last occurrence); nil: none
	method  string
	params  json.RawMessage
	raw     json.RawMessage // the message as read
}

// lineError is the answer to a refused line.
type lineError struct {
	code   int
	reason string          // never quotes the line
	id     json.RawMessage // nil means null
	key    idKey           // id as the go-sdk compares it, when id is set
	// ids, when set, are the ids of a batch's requests, each answered with
	// the error in one batch answer (id is then unused).
	ids []json.RawMessage
}

func parseError(reason string) *lineError {
	return &lineError{code: codeParseError, reason: reason}
}

func invalid(reason string) *lineError {
	return &lineError{code: codeInvalidRequest, reason: reason}
}

// isSpace reports the blanks the go-sdk's decoder skips within a line.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// checkLine decides whether the go-sdk's stdio connection (go-sdk v1.8.0,
// mcp.ioConn) takes line, one input line without its newline, as one
// JSON-RPC message or batch, where a line it refuses would end the session.
// It returns the bytes to pass on (the JSON value alone, without the blanks
// around it; nil for a blank line, which carries nothing) and the messages,
// or the error to answer the line with. A value longer than maxLine is
// refused: with its newline it would not fit in the SDK's frame limit. The
// rules that depend on the session (whether batches are allowed, ids in
// flight) are [session.admit]'s.
//
// Passing the value alone, followed by the newline the reader adds, keeps
// the SDK's frame count exact: its decoder counts against the next frame
// every byte it reads after a value, so a blank or '\r' left after one
// value would count against the line after it.
func checkLine(line []byte) (pass []byte, msgs []info, batch bool, lerr *lineError) {
	start := 0
	for start < len(line) && isSpace(line[start]) {
		start++
	}
	if start == len(line) {
		return nil, nil, false, nil
	}
	end := len(line)
	for isSpace(line[end-1]) {
		end--
	}
	value := line[start:end]
	if len(value) > maxLine {
		return nil, nil, false, invalid("the line is longer than 16 MiB")
	}
	if !json.Valid(value) {
		return nil, nil, false, parseError("the line is not one JSON value")
	}
	if jsondepth.Of(value) > maxDepth {
		return nil, nil, false, invalid("the message nests deeper than 1000 levels")
	}
	switch value[0] {
	case '{':
		m, lerr := checkMessage(value)
		if lerr != nil {
			return nil, nil, false, lerr
		}
		return value, []info{m}, false, nil
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(value, &elems) != nil {
			return nil, nil, false, parseError("the line is not one JSON value")
		}
		if len(elems) == 0 {
			return nil, nil, true, invalid("empty batch")
		}
		msgs = make([]info, 0, len(elems))
		for _, e := range elems {
			m, lerr := checkMessage(e)
			if lerr != nil {
				lerr.id, lerr.key = nil, idKey{} // a batch has no one id
				lerr.reason = "batch member: " + lerr.reason
				return nil, nil, true, lerr
			}
			msgs = append(msgs, m)
		}
		return value, msgs, true, nil
	}
	return nil, nil, false, invalid("a message must be a JSON object (or an array of them)")
}

// members calls fn with the name and the value of each member of obj, a
// valid JSON object, in order, repeated names included.
func members(obj []byte, fn func(name string, value json.RawMessage)) bool {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		name, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
		fn(name, v)
	}
	return true
}

// checkMessage checks one JSON value as jsonrpc2.DecodeMessage of the
// go-sdk does: it decodes the object into a struct whose member names match
// exactly, decoding every occurrence of a repeated member in turn, so that
// an occurrence of the wrong type fails the message while the last one
// gives the value (null leaves a string as it was); unknown members are
// ignored. The members it decodes into typed fields are "jsonrpc"
// (string), "id" (any JSON value, then a string, number or null), "method"
// (raw, then a string) and "error" (the error object); "params" and
// "result" are kept raw.
func checkMessage(raw json.RawMessage) (info, *lineError) {
	if raw[0] != '{' {
		return info{}, invalid("a message must be a JSON object")
	}
	var (
		m                 info
		version           string
		versionOK         = true
		idRaw, method     json.RawMessage
		idDecodes         = true
		errorOK, hasError = true, false
	)
	ok := members(raw, func(name string, v json.RawMessage) {
		switch name {
		case "jsonrpc":
			switch {
			case string(v) == "null":
			case v[0] == '"':
				_ = json.Unmarshal(v, &version) // valid JSON string
			default:
				versionOK = false
			}
		case "id":
			var x any
			if json.Unmarshal(v, &x) != nil { // a number out of range
				idDecodes = false
			}
			idRaw = v
		case "method":
			method = v
		case "params":
			m.params = v
		case "error":
			hasError = true
			if string(v) != "null" && !validWireError(v) {
				errorOK = false
			}
		}
	})
	if !ok {
		return info{}, invalid("a message must be a JSON object")
	}
	id, idOK := parseID(idRaw)
	idOK = idOK && idDecodes
	hasMethod := method != nil
	m.request = hasMethod
	// Answer a request with its id when the id can be read; never answer
	// a response (no method) with its id, which the client would take for
	// the answer to one of its own requests.
	var echo json.RawMessage
	if idOK && id.set && hasMethod {
		echo = idRaw
		if id.isStr {
			echo, _ = marshal(id.s) // valid UTF-8
		}
	}
	fail := func(reason string) (info, *lineError) {
		lerr := &lineError{code: codeInvalidRequest, reason: reason, id: echo}
		if echo != nil {
			lerr.key = id
		}
		return info{}, lerr
	}
	if !versionOK || version != "2.0" {
		return fail(`"jsonrpc" must be "2.0"`)
	}
	if !idOK {
		return fail(`"id" must be a string, a number or null`)
	}
	m.id, m.echo, m.rawID, m.raw = id, echo, idRaw, raw
	if hasMethod {
		if string(method) != "null" && (method[0] != '"' || json.Unmarshal(method, &m.method) != nil) {
			return fail(`"method" must be a string`)
		}
	}
	if hasError && !errorOK {
		return fail(`"error" must be an object with an integer "code" and a string "message"`)
	}
	if !hasMethod && !id.set {
		return fail(`a message without "method" is a response and needs an "id"`)
	}
	return m, nil
}

// validWireError reports whether raw decodes into the go-sdk's error
// object, {"code": int64, "message": string, "data": any}, each optional
// and each occurrence of a repeated member decoded in turn.
func validWireError(raw json.RawMessage) bool {
	if raw[0] != '{' {
		return false
	}
	valid := true
	ok := members(raw, func(name string, v json.RawMessage) {
		if string(v) == "null" {
			return
		}
		switch name {
		case "code":
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				valid = false
			}
		case "message":
			if v[0] != '"' {
				valid = false
			}
		}
	})
	return ok && valid
}

// errorLine is the JSON-RPC error response to a refused line, with its
// newline: one error object, or for a batch's requests each answered
// (e.ids), a batch answer of one error object per id.
func errorLine(e *lineError) []byte {
	if len(e.ids) > 0 {
		var b []byte
		for i, id := range e.ids {
			one := *e
			one.id, one.ids = id, nil
			if i == 0 {
				b = append(b, '[')
			} else {
				b = append(b, ',')
			}
			b = append(b, bytes.TrimSuffix(errorLine(&one), []byte("\n"))...)
		}
		return append(b, ']', '\n')
	}
	id := e.id
	if id == nil {
		id = json.RawMessage("null")
	}
	prefix := "invalid request: "
	switch e.code {
	case codeParseError:
		prefix = "parse error: "
	case codeBusy:
		prefix = "server busy: "
	case codeClosing:
		prefix = "server is closing: "
	}
	type wireError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, err := marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{e.code, prefix + e.reason}})
	if err != nil { // cannot happen: id is a valid JSON string or number
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`)
	}
	return append(b, '\n')
}

// marshal encodes v as the go-sdk encodes its messages: as json.Marshal
// does, without the escaping of '<', '>' and '&' (which would write an id
// made of them six times as long as it was read).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
