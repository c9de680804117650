package mcpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// sdkArgsPrefix starts the text of the error with which go-sdk v1.8.0's
// typed-tool wrapper refuses arguments it cannot read or that its schema
// validation refuses, before the handler runs.
const sdkArgsPrefix = `validating "arguments": `

// sdkRefusedArgs reports whether text, that of an error set on a tool's
// result, is the one with which go-sdk v1.8.0's typed-tool wrapper refuses
// the arguments raw of a tool whose input schema is schema: whether the
// wrapper refuses them, and with exactly this text. The guard's validation
// of the same arguments passed, but the wrapper reads them otherwise: it
// decodes them with every number a float64, so that a number beyond
// float64's range (which the guard accepts up to 1e400) cannot be read,
// and its validator (github.com/google/jsonschema-go) checks multipleOf
// and the bounds in float64, where the guard's is exact (0.07 is not a
// multiple of 0.01 there). The wrapper then never calls the handler.
//
// The whole text must match, not its start: a handler's error may start
// so with a value the caller chose. A raw tool's handler (which the go-sdk
// does not check) whose error is the caller's text and nothing else can
// still pass for the wrapper, when the caller sends arguments the wrapper
// would refuse and the wrapper's very text; but not one [Guard.Wrap]
// protects, whose errors are never checked so (see settle). When several
// arguments fail, the go-sdk's validator names one it picks at random (it
// ranges over a map): a text naming another is answered as the handler's
// error, the safe way.
func sdkRefusedArgs(raw json.RawMessage, schema any, text string) (refused bool) {
	if schema == nil || !strings.HasPrefix(text, sdkArgsPrefix) {
		return false
	}
	defer func() {
		if recover() != nil { // the validator's, on a schema it cannot take
			refused = false
		}
	}()
	want, ok := sdkArgsError(raw, schema)
	return ok && text == want
}

// sdkArgsError returns the text of the error with which go-sdk v1.8.0's
// typed-tool wrapper refuses the arguments raw of a tool whose input
// schema is schema, as its applySchema reads them, or false if it does not
// refuse them (or the guard cannot tell).
func sdkArgsError(raw json.RawMessage, schema any) (string, bool) {
	b, err := json.Marshal(schema)
	if err != nil {
		return "", false
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return "", false
	}
	resolved, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return "", false
	}
	v := make(map[string]any)
	if len(raw) > 0 {
		if msg, ok := unreadableNumber(raw); ok {
			return sdkArgsPrefix + "unmarshaling arguments: " + msg, true
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", false
		}
	}
	var doc any = v
	if _, ok := doc.(map[string]any); ok {
		if err := resolved.ApplyDefaults(&doc); err != nil {
			return sdkArgsPrefix + "applying schema defaults:\n" + err.Error(), true
		}
	}
	if err := resolved.Validate(&doc); err != nil {
		return sdkArgsPrefix + err.Error(), true
	}
	return "", false
}

// unreadableNumber returns the text of the error with which the go-sdk's
// decoder (segmentio/encoding/json v0.5.4, decoding into a
// map[string]any) refuses the arguments raw, a JSON object, for the first
// number in them that a float64 cannot hold, if there is one: a
// *json.UnmarshalTypeError whose value is the number quoted (cut at 32
// bytes), whose struct names the types of the objects and arrays it lies
// in, and whose field is its path of keys and indices. It reads raw once,
// token by token, in memory in proportion to raw: the path and the types
// are put together only for the number found.
func unreadableNumber(raw json.RawMessage) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return "", false
	}
	// open holds the containers the reader is in, outermost first;
	// path[i] is the key or index, in open[i], of the member being read.
	type container struct {
		object bool
		next   int // the index of an array's next element
	}
	open := []container{{object: true}}
	var path []string
	for len(open) > 0 {
		top := &open[len(open)-1]
		if !d.More() {
			if _, err := d.Token(); err != nil { // the closing delimiter
				return "", false
			}
			open = open[:len(open)-1]
			continue
		}
		key := ""
		if top.object {
			k, err := d.Token()
			if err != nil {
				return "", false
			}
			key, _ = k.(string)
		} else {
			key = strconv.Itoa(top.next)
			top.next++
		}
		path = append(path[:len(open)-1], key)
		v, err := d.Token()
		if err != nil {
			return "", false
		}
		switch v := v.(type) {
		case json.Number:
			if _, err := strconv.ParseFloat(string(v), 64); err != nil {
				var in strings.Builder
				for _, c := range open {
					if c.object {
						in.WriteString("map[string]interface {}")
					} else {
						in.WriteString("[]interface {}")
					}
				}
				lit := string(v)
				if len(lit) >= 32 {
					lit = lit[:32] + "..."
				}
				e := &json.UnmarshalTypeError{Value: strconv.Quote(lit), Type: reflect.TypeFor[float64](), Struct: in.String(), Field: strings.Join(path, ".")}
				return e.Error(), true
			}
		case json.Delim: // an opening one: the decoder checks the nesting
			open = append(open, container{object: v == '{'})
		}
	}
	return "", false
}

// wrapperDefaults returns raw, a call's arguments (a JSON object), with
// the defaults of the input schema schema filled in, as go-sdk v1.8.0's
// typed-tool wrapper fills them in before its handler runs (jsonschema-go's
// ApplyDefaults: a property's "default" where the property is absent and
// not required, in nested objects too), and true; false when it would fill
// in none, or the guard cannot tell. The caller's own values are kept as
// written. The guard shows the human these arguments when it asks to
// confirm a call ([Guard.confirmText]): the handler runs with them.
func wrapperDefaults(raw json.RawMessage, schema any) (json.RawMessage, bool) {
	b, err := json.Marshal(schema)
	if err != nil || !bytes.Contains(b, []byte(`"default"`)) {
		return nil, false
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, false
	}
	resolved, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(orEmpty(raw)))
	d.UseNumber()
	var doc any
	if d.Decode(&doc) != nil {
		return nil, false
	}
	if doc == nil {
		doc = map[string]any{} // no arguments: the wrapper reads an empty object
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, false
	}
	before, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	if err := func() (err error) {
		defer func() {
			if recover() != nil { // the library's, on a schema it cannot take
				err = errors.New("panicked")
			}
		}()
		var in any = m
		return resolved.ApplyDefaults(&in)
	}(); err != nil {
		return nil, false
	}
	after, err := json.Marshal(m)
	if err != nil || bytes.Equal(before, after) {
		return nil, false
	}
	return after, true
}
