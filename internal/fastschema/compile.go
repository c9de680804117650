package fastschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/foldkey"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON types as a bit set.
const (
	tObject uint8 = 1 << iota
	tArray
	tString
	tNumber
	tInteger
	tBoolean
	tNull
)

// typeName is the JSON Schema name of the type bit 1<<i.
func typeName(i int) string {
	return [...]string{"object", "array", "string", "number", "integer", "boolean", "null"}[i]
}

const numTypes = 7

// maxKnownNames bounds properties ∪ required per object schema (a bit set).
const maxKnownNames = 64

// A node is one compiled (sub)schema. A nil *node accepts any value.
type node struct {
	never bool  // the false schema
	types uint8 // 0: any type

	// strings
	minLen, maxLen int // -1: absent
	pattern        *matcher
	patternSrc     string
	format         formatFunc
	formatName     string

	// numbers
	bounds []bound

	// enum and const: every list must contain an equal value
	enums [][]scalar

	// objects
	names      []name // properties first, then required names that are not properties
	index      map[string]int
	folds      map[string]uint64 // folded name -> the names folding to it (bit i: names[i])
	twins      []uint64          // twins[i]: the other names folding like names[i]
	required   uint64            // bit i: names[i] is required
	reqOrder   []int             // indexes into names, in the order of "required"
	additional bool              // unknown names allowed
	minProps   int
	maxProps   int

	// arrays
	items    *node
	minItems int
	maxItems int
}

type name struct {
	name   string
	isProp bool
	sub    *node
}

type boundOp uint8

const (
	opMin boundOp = iota
	opMax
	opExMin
	opExMax
)

type bound struct {
	op   boundOp
	text string // the bound as the reference's message prints it (ratText)
	d    decimal
}

type scalarKind uint8

const (
	sString scalarKind = iota
	sNumber
	sBool
	sNull
)

type scalar struct {
	kind scalarKind
	str  []byte
	num  decimal
	b    bool
}

var errUnsupported = errors.New("unsupported")

type compiler struct {
	uri func(any) error // v6's "uri" format, loaded on first use
}

// buildNode compiles one schema position; it returns errUnsupported for
// anything outside the subset.
func (c *compiler) buildNode(v any, root bool) (*node, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return nil, nil
		}
		return &node{never: true}, nil
	case map[string]any:
		return c.buildObject(x, root)
	}
	return nil, errUnsupported
}

func (c *compiler) buildObject(m map[string]any, root bool) (*node, error) {
	n := &node{minLen: -1, maxLen: -1, minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, additional: true}
	var required []string
	var props map[string]any
	// Keywords in sorted order, so that the order of checks (and so which
	// of several failures a message names) is the same on every run.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		var err error
		switch k {
		case "title", "description", "$comment":
			if _, ok := v.(string); !ok {
				return nil, errUnsupported
			}
		case "default", "examples":
		case "readOnly", "writeOnly", "deprecated":
			if _, ok := v.(bool); !ok {
				return nil, errUnsupported
			}
		case "$schema":
			if s, ok := v.(string); !ok || !root || (s != "https://json-schema.org/draft/2020-12/schema" && s != "https://json-schema.org/draft/2020-12/schema#") {
				return nil, errUnsupported
			}
		case "type":
			n.types, err = parseTypes(v)
		case "properties":
			var ok bool
			if props, ok = v.(map[string]any); !ok {
				return nil, errUnsupported
			}
		case "required":
			arr, ok := v.([]any)
			if !ok {
				return nil, errUnsupported
			}
			for _, r := range arr {
				s, ok := r.(string)
				if !ok {
					return nil, errUnsupported
				}
				required = append(required, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil, errUnsupported
			}
			n.additional = b
		case "enum":
			arr, ok := v.([]any)
			if !ok {
				return nil, errUnsupported
			}
			var list []scalar
			for _, e := range arr {
				s, err := parseScalar(e)
				if err != nil {
					return nil, err
				}
				list = append(list, s)
			}
			n.enums = append(n.enums, list)
		case "const":
			s, err := parseScalar(v)
			if err != nil {
				return nil, err
			}
			n.enums = append(n.enums, []scalar{s})
		case "minLength":
			n.minLen, err = parseCount(v)
		case "maxLength":
			n.maxLen, err = parseCount(v)
		case "minItems":
			n.minItems, err = parseCount(v)
		case "maxItems":
			n.maxItems, err = parseCount(v)
		case "minProperties":
			n.minProps, err = parseCount(v)
		case "maxProperties":
			n.maxProps, err = parseCount(v)
		case "pattern":
			s, ok := v.(string)
			if !ok {
				return nil, errUnsupported
			}
			// v6's default engine: regexp.Compile, matched unanchored.
			if n.pattern, err = compileMatcher(s); err != nil {
				return nil, errUnsupported
			}
			n.patternSrc = s
		case "format":
			s, ok := v.(string)
			if !ok {
				return nil, errUnsupported
			}
			n.formatName = s
			if n.format = builtinFormat(s); n.format == nil {
				if s != "uri" {
					return nil, errUnsupported
				}
				if c.uri == nil {
					if c.uri = uriFormat(); c.uri == nil {
						return nil, errUnsupported
					}
				}
				uri := c.uri
				n.format = func(b []byte) bool { return uri(string(b)) == nil }
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			b, err := parseBound(k, v)
			if err != nil {
				return nil, err
			}
			n.bounds = append(n.bounds, b)
		case "items":
			if n.items, err = c.buildNode(v, false); err != nil {
				return nil, err
			}
		default:
			return nil, errUnsupported
		}
		if err != nil {
			return nil, err
		}
	}
	// Bounds in the order v6 checks them: minimum, maximum,
	// exclusiveMinimum, exclusiveMaximum.
	slices.SortStableFunc(n.bounds, func(a, b bound) int { return int(a.op) - int(b.op) })
	for _, pname := range slices.Sorted(maps.Keys(props)) {
		sn, err := c.buildNode(props[pname], false)
		if err != nil {
			return nil, err
		}
		n.names = append(n.names, name{name: pname, isProp: true, sub: sn})
	}
	for _, r := range required {
		i := n.lookup([]byte(r))
		if i < 0 {
			n.names = append(n.names, name{name: r})
			i = len(n.names) - 1
		}
		if len(n.names) > maxKnownNames {
			return nil, errUnsupported
		}
		n.required |= 1 << uint(i)
		n.reqOrder = append(n.reqOrder, i)
	}
	if len(n.names) > maxKnownNames {
		return nil, errUnsupported
	}
	if len(n.names) > 8 {
		n.index = make(map[string]int, len(n.names))
		for i, nm := range n.names {
			n.index[nm.name] = i
		}
	}
	if len(n.names) > 0 {
		// Names that differ only in letter case are one name to
		// encoding/json, and those that differ also in '_' and '-' to
		// encoding/json/v2's case-insensitive matching
		// (foldkey.AppendName): an instance may hold only one of each group.
		n.folds = make(map[string]uint64, len(n.names))
		for i, nm := range n.names {
			n.folds[string(foldkey.AppendName(nil, []byte(nm.name)))] |= 1 << uint(i)
		}
		n.twins = make([]uint64, len(n.names))
		for i, nm := range n.names {
			n.twins[i] = n.folds[string(foldkey.AppendName(nil, []byte(nm.name)))] &^ (1 << uint(i))
		}
	}
	return n, nil
}

// lookup returns the index of key in n.names, or -1.
func (n *node) lookup(key []byte) int {
	if n.index != nil {
		if i, ok := n.index[string(key)]; ok {
			return i
		}
		return -1
	}
	for i := range n.names {
		if n.names[i].name == string(key) {
			return i
		}
	}
	return -1
}

func parseTypes(v any) (uint8, error) {
	var list []any
	switch x := v.(type) {
	case string:
		list = []any{x}
	case []any:
		list = x
	default:
		return 0, errUnsupported
	}
	var t uint8
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return 0, errUnsupported
		}
		found := false
		for i := range numTypes {
			if s == typeName(i) {
				t |= 1 << uint(i)
				found = true
			}
		}
		if !found {
			return 0, errUnsupported
		}
	}
	if t == 0 {
		return 0, errUnsupported
	}
	return t, nil
}

// numberLiteral returns the text v6 would hand to big.Rat.SetString
// (fmt.Sprint of the value).
func numberLiteral(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		return fmt.Sprint(x), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

func parseNumber(v any) (string, decimal, error) {
	lit, ok := numberLiteral(v)
	if !ok {
		return "", decimal{}, errUnsupported
	}
	d, ok := parseDecimal([]byte(lit))
	if !ok || !d.ratOK {
		return "", decimal{}, errUnsupported
	}
	return lit, d, nil
}

// parseCount reads a non-negative integer keyword (minLength, ...).
func parseCount(v any) (int, error) {
	lit, d, err := parseNumber(v)
	if err != nil || !d.isInt || d.neg {
		return 0, errUnsupported
	}
	if d.zero {
		return 0, nil
	}
	// Small integers only: re-read the literal through big.Rat-free means.
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f < 0 || f > math.MaxInt32 {
		return 0, errUnsupported
	}
	return int(f), nil
}

func parseBound(k string, v any) (bound, error) {
	lit, d, err := parseNumber(v)
	if err != nil {
		return bound{}, err
	}
	b := bound{text: ratText(lit), d: d}
	switch k {
	case "minimum":
		b.op = opMin
	case "maximum":
		b.op = opMax
	case "exclusiveMinimum":
		b.op = opExMin
	default:
		b.op = opExMax
	}
	return b, nil
}

// ratText prints the number lit, which big.Rat parses, as mcpguard's
// reference path prints a bound in a message: an integer in full, any
// other number as the nearest float64 (fmt.Sprint). It runs at compile
// time, so that a refusal allocates no more than its message; a bound of
// 1e999999 (which v6 accepts) costs a tenth of a second there, and its
// million digits are in the message, as on the reference path.
func ratText(lit string) string {
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return lit
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

func parseScalar(v any) (scalar, error) {
	switch x := v.(type) {
	case nil:
		return scalar{kind: sNull}, nil
	case bool:
		return scalar{kind: sBool, b: x}, nil
	case string:
		return scalar{kind: sString, str: []byte(x)}, nil
	}
	lit, ok := numberLiteral(v)
	if !ok {
		return scalar{}, errUnsupported
	}
	d, ok := parseDecimal([]byte(lit))
	if !ok {
		return scalar{}, errUnsupported
	}
	// A literal big.Rat cannot parse equals nothing in v6: keep it, it
	// never matches (ratOK false).
	return scalar{kind: sNumber, num: d}, nil
}

func (s *scalar) equalString(b []byte) bool { return s.kind == sString && bytes.Equal(s.str, b) }

// CompileReference compiles doc exactly as the reference pipeline does. It
// refuses a schema with a count keyword (minLength, maxItems, ...) beyond
// math.MaxInt (2^63-1; 2^31-1 on 32-bit platforms), which v6 would keep
// only the low bits of: maxLength 18446744073709551621 would be enforced
// as 5, minItems 2^64+1 as 1.
func CompileReference(doc any) (*jsonschema.Schema, error) {
	if err := hugeCount(doc); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refusingLoader{})
	const loc = "mcpguard:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %q refused: schemas may only reference themselves", url)
}

// uriFormat returns v6's own "uri" format function.
func uriFormat() func(any) error {
	sch, err := CompileReference(map[string]any{"format": "uri"})
	if err != nil || sch.Format == nil {
		return nil
	}
	return sch.Format.Validate
}

// countKeywords are the keywords whose value v6 reads into an int.
var countKeywords = map[string]bool{
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"minProperties": true, "maxProperties": true, "minContains": true, "maxContains": true,
}

// hugeCount finds a count keyword beyond math.MaxInt anywhere in doc (in
// const or enum data too: refusing such a schema is safer than telling its
// data from its keywords here).
func hugeCount(doc any) error {
	switch x := doc.(type) {
	case map[string]any:
		for k, v := range x {
			if n, ok := v.(json.Number); ok && countKeywords[k] {
				if !fitsInt(string(n)) {
					return fmt.Errorf("%s %s is beyond what the validator can hold (at most %d)", k, n, math.MaxInt)
				}
				continue
			}
			if err := hugeCount(v); err != nil {
				return err
			}
		}
	case []any:
		for _, v := range x {
			if err := hugeCount(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// fitsInt reports whether the JSON number lit is at most math.MaxInt, the
// int v6 reads a count into, exactly: a float64 rounds 2^63-1 up to 2^63.
// (A negative or fractional count is the meta-schema's to refuse.)
func fitsInt(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
		return false
	}
	const limit = float64(math.MaxInt)
	switch {
	case f < limit/2:
		return true
	case f > 2*limit:
		return false
	}
	// Near the bound, where the literal's exponent is as small as its
	// digits allow: compare exactly.
	r, ok := new(big.Rat).SetString(lit)
	return ok && r.Cmp(new(big.Rat).SetInt64(math.MaxInt)) <= 0
}
