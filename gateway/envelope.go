package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/foldkey"
	"github.com/mcpguard/mcpguard/internal/jsonnum"
	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/mcpguard/mcpguard/policy"
)

// A message is one JSON-RPC message of a request body (the body itself, or one
// member of a batch), as the strict scanner in this file understands it.
type message struct {
	raw       []byte // the exact bytes of this message
	id        []byte // the raw id token; nil when absent
	method    string
	hasMethod bool
	response  bool   // a result or error sent by the client (answer to a server request)
	tool      string // params.name of a tools/call
	args      []byte // raw params.arguments of a tools/call; nil when absent
	state     string // params.requestState of a tools/call (a next round); "" when absent
	invalid   *rpcError
	// badName is the params.name of a tools/call refused for its
	// characters (then tool is ""), for its record.
	badName string
}

// notification reports whether m is a request that must not be answered:
// one with a method and no id, including one refused for its params (a
// malformed envelope is answered, with a null id, as JSON-RPC asks).
func (m *message) notification() bool {
	return m.hasMethod && m.id == nil && (m.invalid == nil || m.invalid.code == CodeInvalidParams)
}

// listen reports whether m is a subscriptions/listen request (protocol
// 2026-07-28): its answer is an event stream that stays open, silent until
// something changes, for as long as its client holds it.
func (m *message) listen() bool {
	return m != nil && m.method == "subscriptions/listen" && m.id != nil && m.invalid == nil
}

// idOrNil returns m's id, nil when m is nil (a GET or a DELETE) or has
// none.
func (m *message) idOrNil() []byte {
	if m == nil {
		return nil
	}
	return m.id
}

// Known member names. Keys that equal one of these case-insensitively but not
// exactly are refused, as are keys that equal one once '_' and '-' are
// dropped: decoders disagree about them (encoding/json matches struct fields
// case-insensitively, encoding/json/v2's case-insensitive matching also
// ignores '_' and '-', the go-sdk does neither), and a gateway that reads a
// different value than the downstream is a bypass.
var (
	envelopeKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}
	paramsKeys   = [...]string{"name", "arguments", "requestState"}
)

// parseBody parses a request body. A non-nil error refuses the whole body
// (not JSON, not an object or array, an empty batch or one of more than
// maxBatchMembers members). Otherwise each message carries its own verdict
// in invalid.
func parseBody(body []byte) (msgs []message, batch bool, err *rpcError) {
	if !utf8.Valid(body) || !json.Valid(body) {
		return nil, false, errParse()
	}
	i := skipWS(body, 0)
	switch body[i] {
	case '{':
		var m message
		parseMessage(body[i:skipValue(body, i)], &m)
		return []message{m}, false, nil
	case '[':
		n := 0
		err := forEachElement(body, i, func(v []byte) {
			if n++; n > maxBatchMembers {
				return // refused whole below; the rest is not parsed
			}
			var m message
			if v[0] != '{' {
				m.raw = v
				m.invalid = errInvalidRequest("batch member is not an object")
			} else {
				parseMessage(v, &m)
			}
			msgs = append(msgs, m)
		})
		if err != nil {
			return nil, true, err
		}
		if n > maxBatchMembers {
			return nil, true, errInvalidRequest("batch has more than " + strconv.Itoa(maxBatchMembers) + " members")
		}
		if len(msgs) == 0 {
			return nil, true, errInvalidRequest("empty batch")
		}
		return msgs, true, nil
	}
	return nil, false, errInvalidRequest("request is not a JSON object or array")
}

// parseMessage fills m from raw, a JSON object already known to be valid.
func parseMessage(raw []byte, m *message) {
	m.raw = raw
	var seen [len(envelopeKeys)]bool
	var jsonrpc, params, result []byte
	bad := forEachField(raw, func(key, val []byte) *rpcError {
		k := knownKey(key, envelopeKeys[:])
		if k < 0 {
			if foldsToKnown(key, envelopeKeys[:]) {
				// Shown cut: anything may follow a NUL.
				return errInvalidRequest("ambiguous member name " + quoted(string(key)))
			}
			return nil
		}
		if seen[k] {
			return errInvalidRequest("duplicate member " + strconv.Quote(envelopeKeys[k]))
		}
		seen[k] = true
		switch k {
		case 0:
			jsonrpc = val
		case 1:
			m.id = val
		case 2:
			s, ok := jsonString(val)
			if !ok {
				return errInvalidRequest("method must be a string")
			}
			m.method, m.hasMethod = s, true
		case 3:
			params = val
		case 4, 5:
			result = val
		}
		return nil
	})
	// The id is validated first so that later errors can echo it.
	if m.id != nil {
		switch m.id[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			m.id = nil
			if bad == nil {
				bad = errInvalidRequest("id must be a string, a number or null")
			}
		}
	}
	if bad != nil {
		m.invalid = bad
		return
	}
	if s, ok := jsonString(jsonrpc); !ok || s != "2.0" {
		m.invalid = errInvalidRequest(`jsonrpc must be "2.0"`)
		return
	}
	if seen[4] && seen[5] {
		m.invalid = errInvalidRequest("result and error are exclusive")
		return
	}
	if !m.hasMethod {
		if seen[2] {
			m.invalid = errInvalidRequest("method must be a string")
			return
		}
		if result == nil || m.id == nil || params != nil {
			m.invalid = errInvalidRequest("message is neither a request nor a response")
			return
		}
		m.response = true
		return
	}
	if result != nil {
		m.invalid = errInvalidRequest("a request carries no result or error")
		return
	}
	if params != nil && params[0] != '{' {
		m.invalid = errInvalidParams("params must be an object")
		return
	}
	if m.method != "tools/call" {
		switch {
		case strings.EqualFold(m.method, "tools/call"):
			// Method names are case-sensitive, but a lenient downstream
			// must not be offered an unauthorized call.
			m.invalid = errInvalidRequest("method " + strconv.Quote(m.method) + " differs from tools/call only in case")
		case m.method == "":
			m.invalid = errInvalidRequest("method must be a non-empty string")
		case policy.CheckName(m.method) != nil:
			// Nor one that trims "tools/call " or drops the invisible
			// character of "tools/call\u200b" (the policy judges
			// tools/call only), or reads "tools/list " unfiltered.
			m.invalid = errInvalidRequest("method has white space at an end or a control or invisible character")
		}
		return
	}
	if params == nil {
		m.invalid = errInvalidParams("tools/call needs params with a tool name")
		return
	}
	var seenP [len(paramsKeys)]bool
	var name, state []byte
	bad = forEachField(params, func(key, val []byte) *rpcError {
		k := knownKey(key, paramsKeys[:])
		if k < 0 {
			if foldsToKnown(key, paramsKeys[:]) {
				return errInvalidParams("ambiguous parameter name " + quoted(string(key)))
			}
			return nil
		}
		if seenP[k] {
			return errInvalidParams("duplicate parameter " + strconv.Quote(paramsKeys[k]))
		}
		seenP[k] = true
		switch k {
		case 0:
			name = val
		case 1:
			m.args = val
		default:
			state = val
		}
		return nil
	})
	if bad != nil {
		m.invalid = bad
		return
	}
	tool, ok := jsonString(name)
	if !ok || tool == "" {
		m.invalid = errInvalidParams("params.name must be a non-empty string")
		return
	}
	for _, r := range tool {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			m.invalid = errInvalidParams("params.name contains a control character")
			m.badName = tool
			return
		}
	}
	if policy.CheckName(tool) != nil {
		// A downstream that trims names or drops invisible characters
		// would run another tool than the one the policy judged.
		m.invalid = errInvalidParams("params.name has white space at an end or an invisible character")
		m.badName = tool
		return
	}
	if m.args != nil && m.args[0] != '{' && !bytes.Equal(m.args, []byte("null")) {
		m.invalid = errInvalidParams("params.arguments must be an object")
		return
	}
	m.tool = tool
	if state != nil {
		// Read as a string only: any other value is the downstream's to
		// refuse, and no next round the gateway remembered.
		m.state, _ = jsonString(state)
	}
	if m.args != nil && textsafe.JSONReplaced(m.args) {
		// An escaped lone surrogate (the body is UTF-8): the gateway reads
		// U+FFFD where a downstream in JavaScript or Python keeps the
		// surrogate, so the call judged is not the one it would run. The
		// library's pipeline refuses such arguments too.
		m.invalid = errInvalidParams("params.arguments hold a lone UTF-16 surrogate")
	}
}

// knownKey returns the index of key in names, or -1. Keys with escapes are
// decoded first.
func knownKey(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	return -1
}

// cutNUL returns key up to its first NUL: the name a reader that keeps
// names as C strings (cJSON, among others) reads, so that "name\u0000" is
// taken for another spelling of "name" (a second one, which such a reader
// may prefer to the one the gateway judged).
func cutNUL(key []byte) []byte {
	if i := bytes.IndexByte(key, 0); i >= 0 {
		return key[:i]
	}
	return key
}

// foldsToKnown reports whether key, cut at its first NUL (see cutNUL) and
// without '_' and '-' (see dropDelimiters), equals one of names ignoring
// case. encoding/json/v2 ignores '_' and '-' under its case-insensitive
// matching (MatchCaseInsensitiveNames, a `case:ignore` tag), so that
// "me_thod" or "_params" is read as "method" or "params" there. The names
// have neither. A key of up to 64 bytes is compared without allocating.
func foldsToKnown(key []byte, names []string) bool {
	var buf [64]byte
	k := dropDelimiters(append(buf[:0], cutNUL(key)...))
	for _, n := range names {
		if bytes.EqualFold(k, []byte(n)) {
			return true
		}
	}
	return false
}

// jsonString decodes v when it is a JSON string.
func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// forEachField calls fn for every member of obj, a valid JSON object, with the
// decoded key and the raw value, until fn returns an error.
func forEachField(obj []byte, fn func(key, val []byte) *rpcError) *rpcError {
	i := skipWS(obj, 1)
	if obj[i] == '}' {
		return nil
	}
	for {
		kEnd := skipValue(obj, i)
		key := obj[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, _ := jsonString(obj[i:kEnd])
			key = []byte(s)
		}
		i = skipWS(obj, kEnd)
		i = skipWS(obj, i+1) // ':'
		vEnd := skipValue(obj, i)
		if err := fn(key, obj[i:vEnd]); err != nil {
			return err
		}
		i = skipWS(obj, vEnd)
		if obj[i] == '}' {
			return nil
		}
		i = skipWS(obj, i+1) // ','
	}
}

// forEachElement calls fn for every element of the valid JSON array starting
// at body[start].
func forEachElement(body []byte, start int, fn func(v []byte)) *rpcError {
	i := skipWS(body, start+1)
	if body[i] == ']' {
		return nil
	}
	for {
		end := skipValue(body, i)
		fn(body[i:end])
		i = skipWS(body, end)
		if body[i] == ']' {
			return nil
		}
		i = skipWS(body, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i]. b
// must be valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

func skipString(b []byte, i int) int {
	i++
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
			continue
		case '"':
			return i + 1
		}
		i++
	}
	return i
}

// rawArgs gives the policy strict access to a tools/call's arguments: an
// argument named twice, or two names equal under Unicode case folding once
// '_' and '-' are dropped (each cut at a NUL, see cutNUL: "amount" and
// "A_MOUNT"), make every field unreadable (the call is then refused by any
// argument limit). encoding/json gives a handler's struct field the last of
// two case variants; encoding/json/v2's case-insensitive matching ignores '_'
// and '-' too, and takes the last of them under jsontext.AllowDuplicateNames.
type rawArgs struct {
	fields map[string][]byte
	broken bool
}

// newRawArgs reads the members of args, the raw arguments of a tools/call
// (nil or not an object: no fields), in time linear in their number.
func newRawArgs(args []byte) *rawArgs {
	a := &rawArgs{fields: map[string][]byte{}}
	if len(args) == 0 || args[0] != '{' {
		return a
	}
	// Names are compared by their folded forms without '_' and '-' (equal
	// exactly when bytes.EqualFold holds of the names without them), one
	// map look-up each: comparing every name with every other made one
	// request's work grow with the square of its argument count.
	folded := map[string]struct{}{}
	var buf []byte
	_ = forEachField(args, func(key, val []byte) *rpcError {
		buf = dropDelimiters(foldkey.Append(buf[:0], cutNUL(key)))
		if _, dup := folded[string(buf)]; dup {
			a.broken = true
		} else {
			folded[string(buf)] = struct{}{}
		}
		a.fields[string(key)] = val
		return nil
	})
	return a
}

// dropDelimiters removes '_' and '-' from b in place: the name
// encoding/json/v2's case-insensitive matching compares. Folding maps '_'
// and '-' to themselves and no other rune to a byte of theirs, so it may
// come before or after.
func dropDelimiters(b []byte) []byte {
	out := b[:0]
	for _, c := range b {
		if c != '_' && c != '-' {
			out = append(out, c)
		}
	}
	return out
}

// Number implements policy.Args.
func (a *rawArgs) Number(field string) (float64, bool) {
	if a.broken {
		return 0, false
	}
	v, ok := a.fields[field]
	if !ok || len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	// Not strconv.ParseFloat, which misreads a number of more than 800
	// digits before its point (jsonnum.Float).
	return jsonnum.Float(string(v))
}

// NumberText implements policy.ExactArgs: the number's JSON text, so that
// one that rounds to a limit as a float64 is compared by its exact value.
func (a *rawArgs) NumberText(field string) (string, bool) {
	if _, ok := a.Number(field); !ok {
		return "", false
	}
	return string(a.fields[field]), true
}
