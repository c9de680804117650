package fastschema

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// Options tune the checks that mcpguard applies on top of the JSON Schema.
type Options struct {
	// MaxStringBytes bounds every string, values and object keys alike:
	// one longer than this many bytes once unescaped is invalid. Values
	// <= 0 make [Compile] refuse the schema.
	MaxStringBytes int
	// AllowControlChars accepts control characters in strings. False
	// refuses, in values and keys, every C0 control other than tab, line
	// feed and carriage return, DEL (U+007F) and the C1 controls
	// (U+0080..U+009F).
	AllowControlChars bool
}

// A Schema is a compiled fast validator for one JSON Schema. It is immutable
// and safe for concurrent use.
type Schema struct {
	root *node
	opts Options
	seed maphash.Seed
	pool sync.Pool // *state
}

// Compile builds a fast validator from a schema document as decoded by
// jsonschema.UnmarshalJSON (maps, []any, json.Number, string, bool, nil).
// It returns ok=false when the document uses anything outside the
// supported subset, when the reference validator
// (santhosh-tekuri/jsonschema/v6) would not compile it, or when
// opts.MaxStringBytes is not positive; the caller then validates with v6.
//
// The subset: boolean schemas; type; properties; required;
// additionalProperties as a boolean; enum and const with scalar values;
// minLength and maxLength; pattern; format date, date-time, time, email,
// uuid, uri, ipv4, ipv6 and hostname; minimum, maximum, exclusiveMinimum,
// exclusiveMaximum; items as one schema; minItems, maxItems,
// minProperties, maxProperties; the annotations title, description,
// default, examples, $comment, readOnly, writeOnly, deprecated; and $schema
// naming draft 2020-12 at the root.
func Compile(doc any, opts Options) (s *Schema, ok bool) {
	if opts.MaxStringBytes <= 0 {
		return nil, false
	}
	if _, err := CompileReference(doc); err != nil {
		return nil, false
	}
	var c compiler
	root, err := c.buildNode(doc, true)
	if err != nil {
		return nil, false
	}
	s = &Schema{root: root, opts: opts, seed: maphash.MakeSeed()}
	s.pool.New = func() any { return new(state) }
	return s, true
}

// Validate checks raw, the "arguments" of a tool call, and returns nil when
// it is valid. An empty raw (after trimming white space) or the literal null
// counts as {}. The verdict is the reference pipeline's: no duplicate
// object keys (compared after unescaping, two keys that differ only in
// letter case, '_' or '-' being one: see foldkey.AppendName), well-formed
// JSON without
// trailing data, no invalid UTF-8 and no escaped lone UTF-16 surrogate
// ("\ud800", or "\udc00" first) in any string or key, whatever the
// options (encoding/json reads both as U+FFFD), a JSON object at the
// top, every string and key within
// MaxStringBytes and free of control characters (unless allowed), every
// number literal within [MaxNumberLen] characters and an exponent of
// ±[MaxNumberExp], and valid against the schema as v6 (draft 2020-12,
// formats asserted) decides. One deliberate difference: containers nested
// deeper than 64 levels are refused with the message "arguments are
// nested too deeply". A document with problems of several kinds is
// refused, as by the reference, for malformed JSON, trailing data or a
// duplicate first (whichever the scan meets first; the reference puts a
// duplicate first, and names it by its key, not its path), then for
// invalid UTF-8 or a lone surrogate ("arguments hold invalid UTF-8 or a
// lone UTF-16 surrogate", anywhere in the document), then for not
// being an object, then for a string, key or number literal out of bounds
// (the first in the document; the reference, which walks objects in map
// order, may name another), then against the schema.
//
// Validate does not allocate for valid input (except for a "uri" format,
// which uses v6's own check).
func (s *Schema) Validate(raw []byte) *Error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return s.emptyObject()
	}
	st := s.pool.Get().(*state)
	st.s = s
	e := st.document(raw)
	st.release()
	// Do not let one huge document pin its scratch space in the pool.
	const keep = 64 << 10
	if cap(st.buf) > keep || cap(st.kbuf) > keep || cap(st.kbuf2) > keep || cap(st.keys) > keep/32 {
		*st = state{}
	}
	s.pool.Put(st)
	return e
}

// emptyObject validates {} against the root schema.
func (s *Schema) emptyObject() *Error {
	n := s.root
	if n == nil {
		return nil
	}
	var st state
	st.s = s
	if e := st.checkNode(n, tObject, 0); e != nil {
		return e
	}
	if len(n.enums) > 0 {
		return st.fail(errEnum, 0, nil, false, n, nil)
	}
	return st.objectEnd(n, 0, 0, 0)
}

// An Error says why arguments are invalid. Its message names the field but
// never contains the offending value.
type Error struct {
	// Pointer is the JSON pointer of the offending value ("/amount"), or
	// "" for the document itself.
	Pointer string
	// Message is a short explanation, for example
	// `argument "amount" must be > 0`.
	Message string

	kind errKind
}

// Error returns e.Message.
func (e *Error) Error() string { return e.Message }
