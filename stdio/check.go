package stdio

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/mcpguard/mcpguard/internal/jsondepth"
	"github.com/mcpguard/mcpguard/internal/jsonstr"
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

// maxBatch bounds the messages of a batch, as many as requests may be in
// flight. A longer batch is refused whole, before any of its members is
// read: checking each, holding each, and the go-sdk decoding each (some
// 32 KB of garbage a message) made a 16 MiB batch of tiny members cost
// gigabytes.
const maxBatch = maxInFlight

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

// reasonInexactID refuses a request whose number id the go-sdk would
// answer changed (see exactIntID).
const reasonInexactID = `a number "id" must be an integer from -2^53 to 2^53 (the go-sdk would answer it changed: 5.5 as 5)`

// exactIntID reports whether raw, a JSON number that parseID read, is an
// integer from -2^53 to 2^53, which the go-sdk (reading it as a float64,
// then an int64) writes back with the same value: 1, -0, 1.0 or 1e2, not
// 5.5, 9007199254740993 (read as ...992) or 1e-400 (read as 0).
func exactIntID(raw json.RawMessage) bool {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n == int64(f)
	}
	// A fraction or an exponent: its value is f when a float64 holds its
	// significant digits exactly, at most 15 of them (a value with a
	// fraction and so few digits is not rounded to an integer); a value
	// too small for a float64 (1e-400) reads as 0, so 0 must be written
	// with zeros only.
	mant, _, _ := strings.Cut(strings.ToLower(string(raw)), "e")
	sig, zeros, started := 0, 0, false
	for i := 0; i < len(mant); i++ {
		c := mant[i]
		switch {
		case c < '0' || c > '9', c == '0' && !started:
			continue
		case c == '0':
			zeros++
		default:
			zeros = 0
		}
		started = true
		sig++
	}
	if f == 0 {
		return sig == 0
	}
	return sig-zeros <= 15
}

// reasonInexactCancel refuses a notifications/cancelled that names a
// number requestId the go-sdk would read changed (see cancelsExactID).
const reasonInexactCancel = `a number "requestId" of "notifications/cancelled" must be an integer from -2^53 to 2^53 (the go-sdk would cancel another request: 5.5 as 5)`

// cancelsExactID reports whether params, those of a
// notifications/cancelled, name no number requestId but one that
// exactIntID passes. The go-sdk reads the requestId (its last occurrence,
// the member names matched exactly) as it reads an id, into an int64, and
// cancels the request in flight with that id: a requestId of 5.5, naming
// a request the transport refused, would cancel request 5.
func cancelsExactID(params json.RawMessage) bool {
	if len(params) == 0 || params[0] != '{' {
		return true // the SDK reads no requestId
	}
	var id []byte
	members(params, func(name, v []byte) {
		if string(name) == "requestId" {
			id = v
		}
	})
	if id == nil || id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		return true
	}
	return exactIntID(id)
}

// info is what the transport needs to know of one message that passed.
type info struct {
	request bool // it has a method: a request or a notification
	id      idKey
	echo    json.RawMessage // the id to answer a request with, once encoded ([info.answerID])
	rawID   json.RawMessage // the id as read (its last occurrence); nil: none
	method  string
	params  json.RawMessage
	raw     json.RawMessage // the message as read
}

// answerID returns the id to answer m, a request with an id, with: the id
// as the go-sdk writes it ([echoID]). It is encoded at the first call (a
// message that passes is never answered by the transport, and the id may
// be as long as its line).
func (m *info) answerID() json.RawMessage {
	if m.echo == nil {
		m.echo = echoID(m.rawID, m.id)
	}
	return m.echo
}

// echoID returns the id of a request, raw as read and id as the go-sdk
// reads it, as the SDK writes it in an answer: a number as read, a string
// encoded anew.
func echoID(raw json.RawMessage, id idKey) json.RawMessage {
	if !id.isStr {
		return raw
	}
	return appendString(make([]byte, 0, len(id.s)+2), id.s)
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
	// keys are the ids of a batch's members refused alone, as the go-sdk
	// compares them, each with its id in ids; the rest of the batch goes
	// on ([checkLine]).
	keys []idKey
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
//
// A batch member whose number id the SDK would answer changed
// ([reasonInexactID]) is refused alone, the SDK taking the batch as well:
// lerr then answers each such member with its id (lerr.ids, lerr.keys),
// and pass and msgs are the rest of the batch (nil when none is left).
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
		return nil, nil, false, withRequestID(value, invalid("the message nests deeper than 1000 levels"))
	}
	switch value[0] {
	case '{':
		m, lerr := checkMessage(value)
		if lerr != nil {
			return nil, nil, false, lerr
		}
		return value, []info{m}, false, nil
	case '[':
		// The members are counted before any is read: a batch over the
		// bound costs one pass over its bytes, not a decoding of each.
		n := 0
		elements(value, func([]byte) bool {
			n++
			return n <= maxBatch
		})
		if n == 0 {
			return nil, nil, true, invalid("empty batch")
		}
		if n > maxBatch {
			return nil, nil, true, invalid("a batch of more than " + strconv.Itoa(maxBatch) + " messages; send fewer")
		}
		msgs = make([]info, 0, n)
		var inexact *lineError
		elements(value, func(e []byte) bool {
			m, err := checkMessage(e)
			if err != nil && err.reason == reasonInexactID {
				// A request the SDK would run and answer with
				// another id: answered alone with its own.
				if inexact == nil {
					inexact = invalid("batch member: " + reasonInexactID)
				}
				inexact.ids = append(inexact.ids, err.id)
				inexact.keys = append(inexact.keys, err.key)
				return true
			}
			if err != nil {
				err.id, err.key = nil, idKey{} // a batch has no one id
				err.reason = "batch member: " + err.reason
				lerr = err
				return false
			}
			msgs = append(msgs, m)
			return true
		})
		if lerr != nil {
			return nil, nil, true, lerr
		}
		if inexact != nil {
			return rebatch(msgs), msgs, true, inexact
		}
		return value, msgs, true, nil
	}
	return nil, nil, false, invalid("a message must be a JSON object (or an array of them)")
}

// rebatch returns the batch of msgs, members of a batch read, or nil for
// none.
func rebatch(msgs []info) []byte {
	if len(msgs) == 0 {
		return nil
	}
	size := 1
	for _, m := range msgs {
		size += len(m.raw) + 1
	}
	b := make([]byte, 0, size)
	for i, m := range msgs {
		sep := byte(',')
		if i == 0 {
			sep = '['
		}
		b = append(append(b, sep), m.raw...)
	}
	return append(b, ']')
}

// withRequestID gives lerr, the refusal of value (valid JSON) as a whole,
// the id of the request that value is, when it can be read, as
// [checkMessage] answers a request it refuses: a client waits for an
// answer with its id (a go-sdk client takes one without an id for a broken
// connection, and ends its session). The walk in place does not recurse,
// so a value nested too deep to pass is read safely.
func withRequestID(value []byte, lerr *lineError) *lineError {
	if value[0] != '{' {
		return lerr // a batch has no one id
	}
	m, merr := checkMessage(value)
	switch {
	case merr != nil:
		lerr.id, lerr.key = merr.id, merr.key
	case m.request && m.id.set:
		lerr.id, lerr.key = m.answerID(), m.id
	}
	return lerr
}

// The functions below walk a valid JSON text in place, without decoding
// or copying it: the parts they hand out are slices of it.

// isJSONSpace reports the blanks JSON allows between tokens.
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns i moved past the blanks at b[i:].
func skipSpace(b []byte, i int) int {
	for i < len(b) && isJSONSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string that opens at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the JSON value that starts at b[i],
// b holding it whole and valid.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && !isJSONSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}

// elements calls fn with each element of arr, a valid JSON array, in
// order, until fn returns false.
func elements(arr []byte, fn func(elem []byte) bool) {
	i := skipSpace(arr, 1)
	if arr[i] == ']' {
		return
	}
	for {
		end := valueEnd(arr, i)
		if !fn(arr[i:end]) {
			return
		}
		if i = skipSpace(arr, end); arr[i] != ',' {
			return
		}
		i = skipSpace(arr, i+1)
	}
}

// members calls fn with the name (decoded) and the value of each member of
// obj, a valid JSON object, in order, repeated names included. The name is
// a slice of obj unless it holds an escape.
func members(obj []byte, fn func(name, value []byte)) {
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		return
	}
	for {
		end := stringEnd(obj, i)
		name := obj[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			_ = json.Unmarshal(obj[i:end], &s) // a valid JSON string
			name = []byte(s)
		}
		i = skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		end = valueEnd(obj, i)
		fn(name, obj[i:end])
		if i = skipSpace(obj, end); obj[i] != ',' {
			return
		}
		i = skipSpace(obj, i+1)
	}
}

// numbersFit reports whether every number in v, a valid JSON value, is
// within the range of a float64, as decoding v into an any requires.
func numbersFit(v []byte) bool {
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case c == '"':
			i = stringEnd(v, i)
		case c == '-' || c >= '0' && c <= '9':
			end := valueEnd(v, i)
			if _, err := strconv.ParseFloat(string(v[i:end]), 64); err != nil {
				return false
			}
			i = end
		default:
			i++
		}
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
		versionRaw        []byte // the last occurrence that is a string
		versionOK         = true
		idRaw, method     json.RawMessage
		idDecodes         = true
		errorOK, hasError = true, false
	)
	members(raw, func(name, v []byte) {
		switch string(name) {
		case "jsonrpc":
			switch {
			case string(v) == "null":
			case v[0] == '"':
				versionRaw = v
			default:
				versionOK = false
			}
		case "id":
			if !numbersFit(v) { // it would not decode into an any
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
	var version string
	if versionRaw != nil {
		_ = json.Unmarshal(versionRaw, &version) // a valid JSON string
	}
	id, idOK := parseID(idRaw)
	idOK = idOK && idDecodes
	hasMethod := method != nil
	m.request = hasMethod
	// Answer a request with its id when the id can be read; never answer
	// a response (no method) with its id, which the client would take for
	// the answer to one of its own requests.
	fail := func(reason string) (info, *lineError) {
		lerr := invalid(reason)
		if idOK && id.set && hasMethod {
			lerr.id, lerr.key = echoID(idRaw, id), id
		}
		return info{}, lerr
	}
	if !versionOK || version != "2.0" {
		return fail(`"jsonrpc" must be "2.0"`)
	}
	if !idOK {
		return fail(`"id" must be a string, a number or null`)
	}
	if hasMethod && id.set && !id.isStr && !exactIntID(idRaw) {
		// The go-sdk reads a number id into an int64 and answers with
		// that: the client could not match the answer to its request.
		return fail(reasonInexactID)
	}
	m.id, m.rawID, m.raw = id, idRaw, raw
	if hasMethod {
		if string(method) != "null" && (method[0] != '"' || json.Unmarshal(method, &m.method) != nil) {
			return fail(`"method" must be a string`)
		}
	}
	if m.method == methodCancelled && !cancelsExactID(m.params) {
		return fail(reasonInexactCancel)
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
	members(raw, func(name, v []byte) {
		if string(v) == "null" {
			return
		}
		switch string(name) {
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
	return valid
}

// errorLine is the JSON-RPC error response to a refused line, with its
// newline: one error object, or for a batch's requests each answered
// (e.ids), a batch answer of one error object per id. It is written in one
// buffer of its final size, the ids copied once: an id may be as long as
// its line.
func errorLine(e *lineError) []byte {
	prefix := "invalid request: "
	switch e.code {
	case codeParseError:
		prefix = "parse error: "
	case codeBusy:
		prefix = "server busy: "
	case codeClosing:
		prefix = "server is closing: "
	}
	message := appendString(nil, prefix+e.reason)
	code := strconv.Itoa(e.code)
	ids := e.ids
	if len(ids) == 0 {
		ids = []json.RawMessage{e.id}
	}
	const head, mid, tail = `{"jsonrpc":"2.0","id":`, `,"error":{"code":`, `}}`
	size := 3 // the brackets and the newline
	for _, id := range ids {
		size += len(head) + max(len(id), len("null")) + len(mid) + len(code) + len(`,"message":`) + len(message) + len(tail) + 1
	}
	b := make([]byte, 0, size)
	if len(e.ids) > 0 {
		b = append(b, '[')
	}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		if id == nil {
			id = json.RawMessage("null")
		}
		b = append(b, head...)
		b = append(b, id...)
		b = append(b, mid...)
		b = append(b, code...)
		b = append(b, `,"message":`...)
		b = append(b, message...)
		b = append(b, tail...)
	}
	if len(e.ids) > 0 {
		b = append(b, ']')
	}
	return append(b, '\n')
}

// appendString appends s to b as a JSON string, as the go-sdk encodes
// one: as encoding/json does, without the escaping of '<', '>' and '&'
// (which would write an id made of them six times as long as it was read).
// '"', '\\' and the control characters are escaped (\b, \f, \n, \r and
// \t by name, the others as \u00XX), U+2028 and U+2029 as \u2028 and
// \u2029, and an invalid UTF-8 byte as \ufffd. It writes in place, without
// encoding/json's buffers: an id may be as long as its line.
func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s, false) }
