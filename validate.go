package mcpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/fastschema"
	"github.com/mcpguard/mcpguard/internal/textsafe"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// ValidationOptions tune strict argument validation. The zero value is the
// strictest setting. Whatever they say, arguments with a duplicate member
// name (two names of one object that differ only in letter case, '_' or
// '-' count as one: encoding/json, or encoding/json/v2's case-insensitive
// matching, gives a handler's field the value of either), or with invalid
// UTF-8 or an escaped lone UTF-16 surrogate ("\ud800", or "\udc00" first)
// in a string or a member name, are refused: encoding/json reads such text
// as U+FFFD, so the validator would check other text than a downstream that
// keeps it reads, and a confirmation could not be bound to the exact
// arguments.
type ValidationOptions struct {
	// Lenient turns strict mode off: object schemas that do not say
	// otherwise then accept unknown fields, as JSON Schema does by default.
	// False (the default) rejects unknown fields even when the tool's schema
	// forgot "additionalProperties": false. Lenient mode still refuses
	// duplicate member names and invalid UTF-8 or lone surrogates, and
	// (as strict mode does where a schema may admit undeclared fields:
	// additionalProperties, patternProperties, or an in-place applicator
	// such as allOf or $ref, below which strict mode closes nothing) a
	// field whose name is not declared at its position but differs from a
	// property declared there only in letter case, '_' or '-':
	// encoding/json would match {"AMOUNT": 1e6}, and encoding/json/v2's
	// case-insensitive matching {"a_mount": 1e6} too, to a handler's field
	// "amount", which the schema's checks of "amount" never saw. At and
	// below a reference that check cannot follow (any in a schema that
	// embeds a resource with its own "$id", or draft 4 "id"; one relative
	// to the root's "$id"), where it cannot see the names declared, it
	// refuses a field whose name the schema declares nowhere but that
	// differs only so from one it declares anywhere. A schema too complex
	// for that check to list its object positions (over 32768 of them) is
	// refused.
	Lenient bool
	// MaxStringBytes bounds every string in the arguments (and every
	// argument name). 0, or a negative value, means 65536.
	MaxStringBytes int
	// AllowControlChars accepts control characters in strings. False (the
	// default) refuses every C0 control except tab, line feed and carriage
	// return, and DEL and the C1 controls.
	AllowControlChars bool
}

// A Validator checks a JSON value against one compiled JSON Schema, the way
// mcpguard validates tool arguments: no type coercion, formats asserted,
// unknown fields refused in strict mode, strings bounded and free of
// control characters, and (in lenient mode too) no duplicate member names
// (two names that differ only in letter case, '_' or '-' being one), no
// undeclared name that differs from a declared property's only so where
// the schema may admit undeclared ones (see
// [ValidationOptions].Lenient), and no invalid UTF-8 or lone UTF-16
// surrogates. "$ref" resolves only within the schema: nothing is
// ever loaded from disk or the network. A Validator is immutable and safe
// for concurrent use. The zero Validator refuses every value: make one with
// [NewValidator] or [NewOutputValidator].
type Validator struct {
	sch     *jsonschema.Schema
	base    *jsonschema.Schema // strict mode: the schema as written, checked first
	fast    *fastschema.Schema // nil when the schema is outside the fast subset
	cases   *caseNode          // nil when no undeclared name can pass (see caseNode)
	maxStr  int
	ctrlOK  bool
	isInput bool
}

// compileSchema compiles doc as the fast path's reference does (see
// fastschema.CompileReference).
func compileSchema(doc any) (*jsonschema.Schema, error) {
	sch, err := fastschema.CompileReference(doc)
	if err != nil {
		return nil, fmt.Errorf("mcpguard: compiling schema: %w", err)
	}
	return sch, nil
}

// NewValidator compiles schema, which may be any value that marshals to a
// JSON Schema object (a map, json.RawMessage, or the go-sdk's
// *jsonschema.Schema), or to true. Schemas without "$schema" are read as
// draft 2020-12. A nil opts means the strictest setting (see
// [ValidationOptions]). It returns an error for a schema that does not
// marshal, is not an object (false included), does not compile, or is too
// complex for the letter-case check (see [ValidationOptions].Lenient).
func NewValidator(schema any, opts *ValidationOptions) (*Validator, error) {
	return newValidator(schema, opts, true)
}

func newValidator(schema any, opts *ValidationOptions, input bool) (*Validator, error) {
	var o ValidationOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxStringBytes <= 0 {
		o.MaxStringBytes = 65536
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("mcpguard: schema does not marshal to JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("mcpguard: schema is not JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		if b, ok := doc.(bool); !ok || !b {
			return nil, errors.New("mcpguard: schema must be a JSON object")
		}
	}
	var cases *caseNode
	if input {
		if cases, err = newCaseCheck(doc, o.Lenient); err != nil {
			return nil, err
		}
	}
	var base *jsonschema.Schema
	if input && !o.Lenient {
		// Strict mode: the closed schema, checked together with the schema
		// as written, so that strict mode can only ever refuse more.
		asWritten, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("mcpguard: schema is not JSON: %w", err)
		}
		if base, err = compileSchema(asWritten); err != nil {
			return nil, err
		}
		doc = closeObjects(doc)
	}
	sch, err := compileSchema(doc)
	if err != nil {
		return nil, err
	}
	v := &Validator{sch: sch, base: base, cases: cases, maxStr: o.MaxStringBytes, ctrlOK: o.AllowControlChars, isInput: input}
	if input {
		// The fast path validates the raw bytes without decoding them and
		// gives exactly v6's verdict on the subset it accepts (proved by
		// differential tests and fuzzing in internal/fastschema). In
		// strict mode it checks the closed schema alone: the subset has no
		// in-place applicators or filters, so closing only added
		// additionalProperties false, which refuses at least what the
		// schema as written refuses.
		if f, ok := fastschema.Compile(doc, fastschema.Options{MaxStringBytes: o.MaxStringBytes, AllowControlChars: o.AllowControlChars}); ok {
			v.fast = f
		}
	}
	return v, nil
}

// closeObjects makes strict mode: the object schemas that apply to an
// instance (the root, a property's value, an array's items, the values of
// additionalProperties or patternProperties, the definitions such
// positions name, and those under keywords the validator does not apply,
// where only a $ref can reach them) and declare fields refuse the fields
// they do not declare, unless they already say what to do with them. Where
// a schema declares its fields only directly, it gains
// "additionalProperties": false; where in-place applicators (allOf, anyOf,
// oneOf, if/then/else, dependentSchemas, a $ref) declare some, or a $ref
// cannot be followed here, "unevaluatedProperties": false, which sees the
// fields they evaluate. A schema that declares no field stays open.
// Nothing below an in-place applicator or a filter (not, contains,
// propertyNames) is closed: closing there would change what a branch
// matches. Strict mode is checked together with the schema as written (see
// newValidator), so that whatever the closing does, it can only refuse
// more.
//
// Drafts before 2019-09 lack unevaluatedProperties and ignore the
// siblings of $ref: there the definitions are closed themselves, a
// composed schema with properties of its own gets additionalProperties
// (refusing fields declared only in its branches), and one without stays
// open.
func closeObjects(doc any) any {
	root, _ := doc.(map[string]any)
	old := false
	if id, ok := root["$schema"].(string); ok {
		for _, d := range []string{"draft-04", "draft-06", "draft-07"} {
			old = old || strings.Contains(id, d)
		}
	}
	c := closer{root: root, old: old, memo: map[uintptr]int8{}, walked: map[uintptr]bool{}}
	// A resource embedded with its own $id resolves its references against
	// itself: rather than follow them, treat every reference as one that
	// cannot be followed (strict mode then fails closed).
	c.embedded = hasNestedID(root, true)
	return c.close(doc, true)
}

// hasNestedID reports whether v holds a "$id" below its top level.
func hasNestedID(v any, top bool) bool {
	return anyBelow(v, top, func(m map[string]any) bool {
		_, ok := m["$id"]
		return ok
	})
}

type closer struct {
	root     map[string]any
	old      bool
	embedded bool             // the document embeds resources with their own $id
	memo     map[uintptr]int8 // declaresInPlace per schema: 1 in progress, 2 no, 3 yes
	walked   map[uintptr]bool // $ref targets walked for their instance positions
}

// close walks the schema v, closing it when it applies to an instance
// (apply) and the instance positions within it.
func (c *closer) close(v any, apply bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v // a boolean schema
	}
	each := func(sub any) any {
		if list, ok := sub.([]any); ok {
			for i := range list {
				list[i] = c.close(list[i], true)
			}
			return list
		}
		return c.close(sub, true)
	}
	composed := !c.old && c.declaresInPlace(m)
	for k, sub := range m {
		switch k {
		case "properties", "patternProperties", "$defs", "definitions":
			named, ok := sub.(map[string]any)
			if !ok {
				continue
			}
			child := k == "properties" || k == "patternProperties" || c.old
			for name, s := range named {
				named[name] = c.close(s, child)
			}
		case "items", "prefixItems", "additionalItems", "unevaluatedItems",
			"additionalProperties", "unevaluatedProperties":
			m[k] = each(sub)
		case "$ref":
			// The target applies here: its own instance positions are
			// closed wherever in the document it sits (not only in $defs).
			ref, _ := sub.(string)
			if t, ok := c.resolve(ref).(map[string]any); ok {
				if key := reflect.ValueOf(t).Pointer(); !c.walked[key] {
					c.walked[key] = true
					c.close(t, c.old)
				}
			}
		case "const", "enum", "default", "examples",
			"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
			"dependentSchemas", "dependencies", "contains", "propertyNames":
			// Instances, or schemas below an in-place applicator or a
			// filter: left as they are.
		default:
			// A keyword the validator does not apply (an extension such as
			// "components") may hold schemas a $ref points to, also where
			// the closing cannot follow the $ref (inside a resource
			// embedded with its own id, against which it resolves): they
			// are closed as definitions are. What is not a schema there,
			// the validator never reads.
			c.closeUnknown(sub)
		}
	}
	if !apply {
		return m
	}
	_, props := m["properties"]
	_, pp := m["patternProperties"]
	_, ap := m["additionalProperties"]
	_, up := m["unevaluatedProperties"]
	switch {
	case ap || up:
	case composed:
		m["unevaluatedProperties"] = false
	case props || pp:
		m["additionalProperties"] = false
	}
	return m
}

// closeUnknown closes, as definitions, the schemas that v, the value of a
// keyword the validator does not apply, may hold.
func (c *closer) closeUnknown(v any) {
	switch x := v.(type) {
	case map[string]any:
		c.close(x, c.old)
	case []any:
		for _, e := range x {
			c.closeUnknown(e)
		}
	}
}

// declaresInPlace reports whether an in-place applicator of m (allOf,
// anyOf, oneOf, if/then/else, dependentSchemas, a $ref) declares
// properties, itself or through its own in-place applicators; a reference
// it cannot follow ($dynamicRef, an anchor, another document) counts as
// declaring, so that strict mode fails closed.
func (c *closer) declaresInPlace(m map[string]any) bool {
	key := reflect.ValueOf(m).Pointer()
	switch c.memo[key] {
	case 1, 2:
		return false // in progress (a cycle), or known
	case 3:
		return true
	}
	c.memo[key] = 1
	yes := c.findInPlace(m)
	c.memo[key] = 2
	if yes {
		c.memo[key] = 3
	}
	return yes
}

func (c *closer) findInPlace(m map[string]any) bool {
	declares := func(v any) bool {
		s, ok := v.(map[string]any)
		if !ok {
			return false
		}
		_, props := s["properties"]
		_, pp := s["patternProperties"]
		return props || pp || c.declaresInPlace(s)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := m[k].([]any); ok {
			for _, s := range list {
				if declares(s) {
					return true
				}
			}
		}
	}
	for _, k := range []string{"if", "then", "else"} {
		if declares(m[k]) {
			return true
		}
	}
	if ds, ok := m["dependentSchemas"].(map[string]any); ok {
		for _, s := range ds {
			if declares(s) {
				return true
			}
		}
	}
	_, dyn := m["$dynamicRef"]
	_, rec := m["$recursiveRef"]
	if dyn || rec {
		return true
	}
	if ref, ok := m["$ref"].(string); ok {
		t := c.resolve(ref)
		return t == nil || declares(t)
	}
	return false
}

// resolve returns the schema a local $ref ("#", or a JSON pointer in the
// URI fragment: "#/$defs/x", percent-encoded or not) names, or nil for a
// reference it cannot follow (an anchor, another resource, a bad pointer).
func (c *closer) resolve(ref string) any {
	if c.embedded {
		return nil
	}
	if ref == "#" {
		return c.root
	}
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	p, err := url.PathUnescape(p)
	if err != nil {
		return nil
	}
	var cur any = c.root
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			cur = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}

// Validate decodes raw (numbers kept exact, never coerced) and checks it.
// It returns the decoded value for reuse. An empty raw, or JSON null, is an
// empty object. Malformed JSON, trailing data and duplicate member names
// are refused first, then (by a Validator from [NewValidator]) invalid
// UTF-8 or an escaped lone UTF-16 surrogate anywhere in raw, then a value
// that is not an object, a string or number out of bounds, and last what
// the schema refuses.
// The error, if any, unwraps to [ErrInvalidArguments] and its message names
// the offending field but never echoes values.
func (v *Validator) Validate(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	doc, err := decodeStrict(raw)
	if err != nil {
		return nil, err
	}
	if v.isInput && brokenText(raw) {
		return nil, invalidArgs(brokenTextMessage, "")
	}
	if err := v.ValidateValue(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// check validates raw for the pipeline. It returns the decoded value when
// it had to build it, else nil.
func (v *Validator) check(raw json.RawMessage) (any, error) {
	if v.fast != nil {
		if e := v.fast.Validate(raw); e != nil {
			return nil, invalidArgs(e.Message, e.Pointer)
		}
		if v.cases == nil {
			return nil, nil
		}
		// Checked after the schema, as on the reference path, so that
		// both name the same problem.
		if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
			return nil, nil
		}
		doc, err := decodeStrict(raw)
		if err != nil {
			return nil, err
		}
		if err := v.cases.check(doc, nil); err != nil {
			return nil, err
		}
		return doc, nil
	}
	return v.Validate(raw)
}

// decodeStrict decodes one JSON value with json.Number numbers and refuses
// trailing data and duplicate object keys, equal or differing only in
// letter case, '_' or '-' (see checkKeys: a duplicate is how a payload can
// say one thing to a validator and another to a handler).
func decodeStrict(raw []byte) (any, error) { return decodeJSON(raw, true) }

// decodeResult is decodeStrict for a tool's structured output: keys that
// differ only in letter case, '_' or '-' are distinct there (nothing
// decodes a result into the handler's struct fields), exact duplicates are
// refused.
func decodeResult(raw []byte) (any, error) { return decodeJSON(raw, false) }

func decodeJSON(raw []byte, fold bool) (any, error) {
	if err := checkKeys(raw, fold); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, invalidArgs("arguments are not valid JSON", "")
	}
	if len(bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, invalidArgs("arguments have trailing data", "")
	}
	return doc, nil
}

// ValidateValue checks an already decoded value (numbers as json.Number),
// as Validate does after decoding (so duplicate keys, which decoding
// removed, and invalid UTF-8 or lone surrogates, which it turned into
// U+FFFD, are not seen). Its error unwraps to [ErrInvalidArguments].
func (v *Validator) ValidateValue(doc any) error {
	if v.isInput {
		if _, ok := doc.(map[string]any); !ok {
			return invalidArgs("arguments must be a JSON object", "")
		}
	}
	if err := v.checkStrings(doc, nil); err != nil {
		return err
	}
	err := v.validateV6(doc)
	if err == nil {
		return v.cases.check(doc, nil)
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return invalidArgs("arguments failed validation", "")
	}
	field, msg := describe(ve)
	return invalidArgs(msg, field)
}

// validateV6 runs the reference validator. It panics on some numbers it
// cannot parse (an exponent beyond 1e6 against a numeric bound); such a
// document is invalid, not an internal error.
func (v *Validator) validateV6(doc any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = invalidArgs("arguments contain a number that cannot be checked", "")
		}
	}()
	if v.base != nil {
		if err := v.base.Validate(doc); err != nil {
			return err
		}
	}
	return v.sch.Validate(doc)
}

func (v *Validator) checkStrings(doc any, path []string) error {
	switch x := doc.(type) {
	case string:
		if len(x) > v.maxStr {
			return invalidArgs(fmt.Sprintf("%s is longer than %d bytes", fieldName(path), v.maxStr), pointer(path))
		}
		if !v.ctrlOK && hasControl(x) {
			return invalidArgs(fieldName(path)+" contains control characters", pointer(path))
		}
	case map[string]any:
		for k, sub := range x {
			if len(k) > v.maxStr || (!v.ctrlOK && hasControl(k)) {
				return invalidArgs("argument names must be short and free of control characters", pointer(path))
			}
			if err := v.checkStrings(sub, append(path, k)); err != nil {
				return err
			}
		}
	case json.Number:
		if !fastschema.NumberInRange(string(x)) {
			return invalidArgs(fmt.Sprintf("%s is a number of more than %d characters or with an exponent beyond ±%d", fieldName(path), maxNumberLen, maxNumberExp), pointer(path))
		}
	case []any:
		for i, sub := range x {
			if err := v.checkStrings(sub, append(path, fmt.Sprint(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bounds on a number literal in the arguments, checked by the fast path's
// [fastschema.NumberInRange] on both paths: the reference validator parses each number
// into an exact rational, in time quadratic in the literal's length
// (seconds for a megabyte of digits) and tens of milliseconds for an
// exponent near a million. Far beyond any float64 (17 significant digits,
// exponents within ±324).
const (
	maxNumberLen = fastschema.MaxNumberLen
	maxNumberExp = fastschema.MaxNumberExp
)

// brokenTextMessage refuses arguments for which brokenText holds.
const brokenTextMessage = "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"

// brokenText reports whether raw, valid JSON text, holds text that
// encoding/json reads as U+FFFD ([textsafe.JSONReplaced]): then what a
// validator (or a handler in Go) reads is not what a downstream that keeps
// such text reads, and the confirmation and multi round-trip steps, which
// bind a state to the exact arguments (confirm.ArgsSHA256), cannot.
func brokenText(raw []byte) bool { return textsafe.JSONReplaced(raw) }

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return true
		}
		if c >= 0x80 {
			r, _ := utf8.DecodeRuneInString(s[i:])
			if r >= 0x80 && r <= 0x9f {
				return true
			}
		}
	}
	return false
}

// invalidArgs is an INVALID_ARGUMENTS refusal with message msg and, when
// field (a JSON pointer to the offending value) is not empty and at most
// maxFieldBytes long, details.field. The pointer holds names the caller
// chose, each up to MaxStringBytes long: a longer one is left out rather
// than cut (a cut pointer points elsewhere).
func invalidArgs(msg, field string) *DenialError {
	e := Deny(CodeInvalidArguments, msg)
	if field != "" && len(field) <= maxFieldBytes {
		e.Details = map[string]any{"field": field}
	}
	return e
}

// maxFieldBytes bounds the JSON pointer of a refusal's details.field.
const maxFieldBytes = 256

// maxNameBytes cuts the dotted argument name quoted in a refusal's message,
// as the fast path does.
const maxNameBytes = 64

// quoteName quotes name, an argument's dotted path, for a refusal's message
// as the fast path does: cut at maxNameBytes (at a rune's start) with "…",
// and quoted by strconv.Quote, which escapes what does not print (a bidi
// override among them).
func quoteName(name string) string {
	if len(name) > maxNameBytes {
		cut := maxNameBytes
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return strconv.Quote(name)
}

// pointer is the JSON pointer (RFC 6901) of path: "~" and "/" in a name
// are escaped as "~0" and "~1", as the fast path does.
func pointer(path []string) string {
	var b strings.Builder
	for _, tok := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// dependsFirst reports whether a, a cause at the same place as b, goes
// first: for two dependentRequired (or dependencies) failures, the one of
// the smaller property, as the validator reports them in a map's order,
// which changes from call to call; otherwise their order stands.
func dependsFirst(a, b *jsonschema.ValidationError) bool {
	prop := func(e *jsonschema.ValidationError) (string, bool) {
		switch k := e.ErrorKind.(type) {
		case *kind.DependentRequired:
			return k.Prop, true
		case *kind.Dependency:
			return k.Prop, true
		}
		return "", false
	}
	pa, oka := prop(a)
	pb, okb := prop(b)
	return oka && okb && pa < pb
}

func fieldName(path []string) string {
	if len(path) == 0 {
		return "value"
	}
	return "argument " + quoteName(strings.Join(path, "."))
}

// describe turns the first leaf cause of ve into a field pointer and a
// message that never includes the offending value.
func describe(ve *jsonschema.ValidationError) (field, msg string) {
	leaf := ve
	for len(leaf.Causes) > 0 {
		if _, names := leaf.ErrorKind.(*kind.PropertyNames); names {
			break // the causes are about the name, at the object's place
		}
		// prefer a deterministic leaf: the one with the smallest location,
		// the first of those in the causes' order
		next, at := leaf.Causes[0], strings.Join(leaf.Causes[0].InstanceLocation, "/")
		for _, c := range leaf.Causes[1:] {
			if loc := strings.Join(c.InstanceLocation, "/"); loc < at || loc == at && dependsFirst(c, next) {
				next, at = c, loc
			}
		}
		leaf = next
	}
	path := leaf.InstanceLocation
	name := fieldName(path)
	switch k := leaf.ErrorKind.(type) {
	case *kind.Type:
		msg = fmt.Sprintf("%s must be %s", name, strings.Join(k.Want, " or "))
	case *kind.Required:
		f := append(append([]string(nil), path...), k.Missing[0])
		return pointer(f), fmt.Sprintf("missing required %s", fieldName(f))
	case *kind.AdditionalProperties:
		f := append(append([]string(nil), path...), k.Properties[0])
		return pointer(f), fmt.Sprintf("unknown %s", fieldName(f))
	case *kind.Pattern:
		msg = fmt.Sprintf("%s must match the pattern %s", name, k.Want)
	case *kind.MinItems:
		msg = fmt.Sprintf("%s must have at least %d items", name, k.Want)
	case *kind.MaxItems:
		msg = fmt.Sprintf("%s must have at most %d items", name, k.Want)
	case *kind.MinProperties:
		msg = fmt.Sprintf("%s must have at least %d properties", name, k.Want)
	case *kind.MaxProperties:
		msg = fmt.Sprintf("%s must have at most %d properties", name, k.Want)
	case *kind.MinLength:
		msg = fmt.Sprintf("%s must be at least %d characters", name, k.Want)
	case *kind.MaxLength:
		msg = fmt.Sprintf("%s must be at most %d characters", name, k.Want)
	case *kind.Minimum:
		msg = fmt.Sprintf("%s must be >= %s", name, ratString(k.Want))
	case *kind.Maximum:
		msg = fmt.Sprintf("%s must be <= %s", name, ratString(k.Want))
	case *kind.ExclusiveMinimum:
		msg = fmt.Sprintf("%s must be > %s", name, ratString(k.Want))
	case *kind.ExclusiveMaximum:
		msg = fmt.Sprintf("%s must be < %s", name, ratString(k.Want))
	case *kind.DependentRequired:
		f := append(append([]string(nil), path...), k.Missing[0])
		return pointer(f), fmt.Sprintf("missing required %s (required with %s)", fieldName(f), fieldName(append(append([]string(nil), path...), k.Prop)))
	case *kind.Dependency:
		f := append(append([]string(nil), path...), k.Missing[0])
		return pointer(f), fmt.Sprintf("missing required %s (required with %s)", fieldName(f), fieldName(append(append([]string(nil), path...), k.Prop)))
	case *kind.PropertyNames:
		msg = fmt.Sprintf("%s has a member whose name is not allowed", name)
	case *kind.Not:
		msg = fmt.Sprintf("%s matches a schema it must not match (\"not\")", name)
	case *kind.MultipleOf:
		msg = fmt.Sprintf("%s must be a multiple of %s", name, ratString(k.Want))
	case *kind.UniqueItems:
		msg = fmt.Sprintf("%s must not hold the same item twice", name)
	case *kind.Format:
		msg = fmt.Sprintf("%s must be a valid %s", name, k.Want)
	case *kind.Enum, *kind.Const:
		msg = fmt.Sprintf("%s is not one of the allowed values", name)
	case *kind.FalseSchema:
		msg = fmt.Sprintf("%s is not allowed", name)
	default:
		kw := "schema"
		if p := leaf.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[len(p)-1]
		}
		msg = fmt.Sprintf("%s violates %q", name, kw)
	}
	return pointer(path), msg
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}
