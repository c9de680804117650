package mcpguard

import (
	"encoding/json"
	"math/big"
	"reflect"
	"slices"
	"strconv"

	"github.com/mcpguard/mcpguard/internal/fastschema"
)

// A typed tool's handler (one go-sdk v1.8.0's mcp.AddTool registered)
// does not get its arguments as sent: the go-sdk's wrapper decodes them
// into a map with every number a float64, then encodes that map again and
// decodes the tool's Go type from it. An integer float64 cannot hold
// exactly (beyond 2^53: 12345678901234567) reaches an int64 field as
// another (12345678901234568): another account number than the one the
// caller sent, the guard validated, the limits read and a human confirmed.
// The guard refuses such an integer where the tool's input schema says
// "integer" (what the go-sdk writes for a Go integer type), before
// anything is decided on it. A tool whose raw handler reads such integers
// exactly is guarded with [Guard.Wrap] or [Guard.AddTool], which know its
// handler is raw; Install cannot tell a raw handler from the wrapper.

// intSchema returns the input schema s of a tool as a JSON object when it
// has an "integer" type somewhere (so that a call's arguments may hold an
// integer the wrapper would round), or nil.
func intSchema(s any) map[string]any {
	b, err := json.Marshal(s)
	if err != nil || !containsIntegerType(b) {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// containsIntegerType reports whether b, a schema's JSON, holds the string
// "integer" (a type, or anything else so written: a false positive only
// costs the walk).
func containsIntegerType(b []byte) bool {
	const word = `"integer"`
	for i := 0; i+len(word) <= len(b); i++ {
		if string(b[i:i+len(word)]) == word {
			return true
		}
	}
	return false
}

// longNumber reports whether raw, JSON, holds outside its strings a number
// of 16 digits or more, or one with an exponent: the only ones that can be
// integers beyond 2^53 (9007199254740992, 16 digits). It lets nearly every
// call skip the decoding roundedInteger needs.
func longNumber(raw []byte) bool {
	inString, escaped := false, false
	digits := 0
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString, digits = true, 0
		case c >= '0' && c <= '9':
			if digits++; digits >= 16 {
				return true
			}
		case c == 'e' || c == 'E':
			if digits > 0 {
				return true
			}
		case c == '.' || c == '-' || c == '+':
			// within a number: its digits go on counting
		default:
			digits = 0
		}
	}
	return false
}

// roundedInteger returns the path of the first value (by sorted keys) in
// raw, a call's arguments, that its tool's input schema s types "integer"
// (alone, or with "null") and that is an integer a float64 cannot hold
// exactly, which the wrapper would deliver rounded ([inexactInteger]); ok
// is false when there is none. The schemas that apply to a value are
// those of its property (or additionalProperties) or items, and those
// these reach through a local "$ref" and allOf, anyOf and oneOf: an
// account type written once in $defs, or a nullable integer written as
// anyOf integer and null, is an "integer" too.
func roundedInteger(raw json.RawMessage, s map[string]any) (path []string, ok bool) {
	if s == nil || !longNumber(raw) {
		return nil, false
	}
	doc, err := decodeJSON(raw, false)
	if err != nil {
		return nil, false // the validator's to refuse
	}
	return roundedAt(doc, applying([]any{s}, s), s, nil)
}

// roundedAt is roundedInteger for v, at path, to which the schemas ss
// apply (see applying), in the schema whose root is root.
func roundedAt(v any, ss []map[string]any, root map[string]any, path []string) ([]string, bool) {
	if len(ss) == 0 {
		return nil, false
	}
	switch x := v.(type) {
	case json.Number:
		for _, s := range ss {
			if !onlyInteger(s["type"]) {
				continue
			}
			// An "integer" may stand for a uint64 unless its minimum is
			// negative: a schema of the tool's own need not say minimum 0
			// for one, and the wrapper then delivers a value beyond an
			// int64 (12345678901234567890) rounded.
			min, hasMin := s["minimum"].(float64)
			if inexactInteger(string(x), false) || ((!hasMin || min >= 0) && inexactInteger(string(x), true)) {
				return path, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var sub []any
			for _, s := range ss {
				sub = append(sub, propertySchema(s, k))
			}
			if p, ok := roundedAt(x[k], applying(sub, root), root, append(path[:len(path):len(path)], k)); ok {
				return p, true
			}
		}
	case []any:
		var sub []any
		for _, s := range ss {
			sub = append(sub, s["items"])
		}
		items := applying(sub, root)
		for i, e := range x {
			if p, ok := roundedAt(e, items, root, append(path[:len(path):len(path)], strconv.Itoa(i))); ok {
				return p, true
			}
		}
	}
	return nil, false
}

// applying returns the object schemas among ss and those they reach
// through a local "$ref" (resolved from root; one it cannot follow reaches
// nothing) and the members of allOf, anyOf and oneOf, each once.
func applying(ss []any, root map[string]any) []map[string]any {
	var out []map[string]any
	seen := make(map[uintptr]bool)
	c := &closer{root: root}
	var add func(v any)
	add = func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		p := reflect.ValueOf(m).Pointer()
		if seen[p] {
			return
		}
		seen[p] = true
		out = append(out, m)
		if ref, ok := m["$ref"].(string); ok {
			add(c.resolve(ref))
		}
		for _, kw := range [...]string{"allOf", "anyOf", "oneOf"} {
			list, _ := m[kw].([]any)
			for _, sub := range list {
				add(sub)
			}
		}
	}
	for _, s := range ss {
		add(s)
	}
	return out
}

// inexactInteger reports whether lit, a JSON number, is an integer that a
// float64 cannot hold exactly, and that the wrapper then delivers rounded:
// its float64 is within the range of the widest Go integer type an
// "integer" schema stands for, an int64, or a uint64 when unsigned (the
// schema's minimum is not negative: see beyondIntegers). One beyond it the
// wrapper cannot decode, and refuses without calling the handler
// ([undecodable]).
func inexactInteger(lit string, unsigned bool) bool {
	if !fastschema.NumberInRange(lit) {
		return false // the validator's to refuse, before
	}
	var f float64
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		if -(1<<53) <= i && i <= 1<<53 {
			return false
		}
		f = float64(i)
		if f < 1<<63 && int64(f) == i {
			return false
		}
	} else {
		r, ok := new(big.Rat).SetString(lit)
		if !ok || !r.IsInt() {
			return false
		}
		var exact bool
		if f, exact = r.Float64(); exact {
			return false
		}
	}
	if unsigned {
		return 0 <= f && f < 1<<64
	}
	return -(1<<63) <= f && f < 1<<63
}

// intsUnlessRaw is e.ints, or nil for a raw handler's tool ([Guard.Wrap]).
func (e *toolEntry) intsUnlessRaw() map[string]any {
	if e.raw {
		return nil
	}
	return e.ints
}
