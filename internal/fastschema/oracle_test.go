package fastschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mcpguard/mcpguard/internal/foldkey"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// An oracle is the reference pipeline the fast path must agree with,
// written out step by step from the brief (and mcpguard's validate.go).
type oracle struct {
	sch  *jsonschema.Schema
	opts Options
}

func newOracle(t testing.TB, doc any, opts Options) *oracle {
	t.Helper()
	sch, err := CompileReference(doc)
	if err != nil {
		t.Fatalf("v6 does not compile the schema: %v", err)
	}
	return &oracle{sch: sch, opts: opts}
}

// verdict returns nil when raw is valid, else the step that refused it.
// panicked reports that v6 panicked (counted as invalid: the guard's
// recover turns it into a refused call).
func (o *oracle) verdict(raw []byte) (reason error, panicked bool) {
	// 1. empty or null is {}.
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		raw = []byte("{}")
	}
	// 2. duplicate keys, compared after unescaping.
	if err := dupKeys(raw); err != nil {
		return err, false
	}
	// 3. decode with UseNumber, nothing but white space after the value.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("decode: %w", err), false
	}
	if rest := raw[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return fmt.Errorf("trailing data"), false
	}
	// 3b. text encoding/json would read otherwise than it is written:
	// invalid UTF-8, or an escaped UTF-16 surrogate not half of a pair.
	if err := brokenText(raw); err != nil {
		return err, false
	}
	// 4. an object at the top.
	if _, ok := doc.(map[string]any); !ok {
		return fmt.Errorf("not an object"), false
	}
	// 5. strings and keys: length and control characters; number
	// literals: at most 128 characters, an exponent within ±400.
	if err := o.checkStrings(doc); err != nil {
		return err, false
	}
	// 6. v6.
	defer func() {
		if r := recover(); r != nil {
			reason, panicked = fmt.Errorf("v6 panicked: %v", r), true
		}
	}()
	if err := o.sch.Validate(doc); err != nil {
		return err, false
	}
	return nil, false
}

// brokenText refuses the JSON text raw (valid JSON) when it is not UTF-8
// or when a string of it, read as UTF-16 code units (each \uXXXX one
// unit, each other character its own units), holds a surrogate that is
// not half of a pair.
func brokenText(raw []byte) error {
	if !utf8.Valid(raw) {
		return fmt.Errorf("invalid UTF-8")
	}
	var units []uint16
	check := func() error {
		for i := 0; i < len(units); i++ {
			switch u := units[i]; {
			case 0xd800 <= u && u < 0xdc00 && i+1 < len(units) && 0xdc00 <= units[i+1] && units[i+1] < 0xe000:
				i++
			case 0xd800 <= u && u < 0xe000:
				return fmt.Errorf("lone surrogate %#x", u)
			}
		}
		return nil
	}
	in := false
	for i := 0; i < len(raw); {
		switch {
		case !in:
			in = raw[i] == '"'
			i++
		case raw[i] == '"':
			if err := check(); err != nil {
				return err
			}
			in, units = false, units[:0]
			i++
		case raw[i] == '\\' && raw[i+1] == 'u':
			n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
			if err != nil {
				return fmt.Errorf("bad escape")
			}
			units = append(units, uint16(n))
			i += 6
		case raw[i] == '\\':
			units = append(units, uint16(raw[i+1]))
			i += 2
		default:
			r, size := utf8.DecodeRune(raw[i:])
			units = utf16.AppendRune(units, r)
			i += size
		}
	}
	return nil
}

func (o *oracle) checkString(s string) error {
	if len(s) > o.opts.MaxStringBytes {
		return fmt.Errorf("string longer than %d bytes", o.opts.MaxStringBytes)
	}
	if !o.opts.AllowControlChars {
		for _, r := range s {
			if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r <= 0x9f) {
				return fmt.Errorf("control character %U", r)
			}
		}
	}
	return nil
}

func (o *oracle) checkStrings(v any) error {
	switch x := v.(type) {
	case string:
		return o.checkString(x)
	case map[string]any:
		for k, sub := range x {
			if err := o.checkString(k); err != nil {
				return err
			}
			if err := o.checkStrings(sub); err != nil {
				return err
			}
		}
	case []any:
		for _, sub := range x {
			if err := o.checkStrings(sub); err != nil {
				return err
			}
		}
	case json.Number:
		return checkNumber(string(x))
	}
	return nil
}

// checkNumber is the root's bound on a number literal (validate.go,
// numberInRange), written out independently.
func checkNumber(lit string) error {
	if len(lit) > 128 {
		return fmt.Errorf("number literal of %d characters", len(lit))
	}
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.ParseInt(strings.TrimPrefix(lit[i+1:], "+"), 10, 64)
		if err != nil || e < -400 || e > 400 {
			return fmt.Errorf("number literal with the exponent %s", lit[i+1:])
		}
	}
	return nil
}

// dupKeys walks the token stream of the first value in raw and refuses an
// object with two (unescaped) keys equal but for letter case. Syntax errors are left to the
// decoder.
func dupKeys(raw []byte) error {
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]bool
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
			} else {
				k := tok.(string)
				fk := string(foldkey.AppendName(nil, []byte(k))) // letter case, '_' and '-' aside
				if top.keys[fk] {
					return fmt.Errorf("duplicate key %q", k)
				}
				top.keys[fk] = true
				top.wantKey = false
			}
		} else {
			if top != nil && top.obj {
				top.wantKey = true
			}
			switch tok {
			case json.Delim('{'):
				stack = append(stack, &frame{obj: true, wantKey: true, keys: map[string]bool{}})
			case json.Delim('['):
				stack = append(stack, &frame{})
			case json.Delim(']'):
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

// nestingDepth is the deepest container nesting in raw (outside strings).
func nestingDepth(raw []byte) int {
	depth, deepest, inStr := 0, 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func decodeSchema(t testing.TB, src string) any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatalf("schema %s: %v", src, err)
	}
	return doc
}

// agree checks the fast verdict against the oracle's for one input.
func agree(t testing.TB, fast *Schema, o *oracle, raw []byte) {
	t.Helper()
	got := fast.Validate(raw)
	want, panicked := o.verdict(raw)
	if got != nil && got.kind == errDepth {
		if d := nestingDepth(raw); d <= maxDepth {
			t.Fatalf("Validate(%q) = too deep, but the depth is %d", raw, d)
		}
		return // the documented, stricter deviation
	}
	if (got == nil) != (want == nil) {
		t.Fatalf("Validate(%q) = %v; oracle says %v (v6 panicked: %v)", raw, got, want, panicked)
	}
	if got != nil {
		checkMessage(t, raw, got)
	}
}

// checkMessage asserts that a message never quotes a string value of the
// input (keys may be named).
func checkMessage(t testing.TB, raw []byte, e *Error) {
	t.Helper()
	if e.Message == "" {
		t.Fatalf("Validate(%q): empty message", raw)
	}
	if !utf8.ValidString(e.Message) || !utf8.ValidString(e.Pointer) {
		// keys with invalid UTF-8 are shown after decoding (U+FFFD), so
		// messages are always valid UTF-8
		t.Fatalf("Validate(%q): message %q is not UTF-8", raw, e.Message)
	}
}

// TestOracle pins the reference pipeline itself, so that a permissive
// oracle cannot make the differential tests pass vacuously.
func TestOracle(t *testing.T) {
	o := newOracle(t, decodeSchema(t, openSchema), testOpts)
	for _, tc := range []struct {
		in    string
		valid bool
	}{
		{``, true}, {`null`, true}, {`{}`, true}, {`{"a":[1,{"b":"c"}]}`, true},
		{`{"a":1,"a":2}`, false}, {`{"a":1,"\u0061":2}`, false}, {"{\"a\xff\":1,\"a\xfe\":2}", false},
		{`{"x":{"a":1},"y":{"a":1}}`, true}, {`{"a":[{"b":1},{"b":1}]}`, true},
		{`{} x`, false}, {`{}}`, false}, {`{} `, true}, {`[]`, false}, {`{"a":"\u0000"}`, false},
		{`{"a\u007f":1}`, false}, {`{"a":"\t\n\r"}`, true}, {`{"a":1,}`, false},
		{`{"a":[1e400,1E-400,1e+0400]}`, true}, {`{"a":[1e401]}`, false}, {`{"a":{"b":-1e-401}}`, false},
		{`{"a":1` + strings.Repeat("0", 127) + `}`, true}, {`{"a":1` + strings.Repeat("0", 128) + `}`, false},
	} {
		err, _ := o.verdict([]byte(tc.in))
		if (err == nil) != tc.valid {
			t.Errorf("oracle(%q) = %v, want valid=%v", tc.in, err, tc.valid)
		}
	}
}

// TestV6PanicsOnUnparsableNumbers documents why the pipeline must refuse
// a number big.Rat cannot parse (|exponent| > 1e6) before v6 sees it: with
// a bound, v6 dereferences the nil *big.Rat and panics. The root's number
// bound (exponents within ±400) refuses it first, on both paths. Should v6
// ever stop panicking, this test fails and the choice can be revisited.
func TestV6PanicsOnUnparsableNumbers(t *testing.T) {
	v6 := func(schema string) (err error, panicked bool) {
		defer func() {
			if r := recover(); r != nil {
				err, panicked = fmt.Errorf("v6 panicked: %v", r), true
			}
		}()
		return newOracle(t, decodeSchema(t, schema), testOpts).sch.Validate(map[string]any{"n": json.Number("1e1000001")}), false
	}
	if _, panicked := v6(`{"properties":{"n":{"minimum":0}}}`); !panicked {
		t.Fatal("v6 no longer panics on 1e1000001 with a minimum")
	}
	// Without a bound v6 alone accepts it as a number, but not as an
	// integer; the pipeline refuses it either way.
	for _, tc := range []struct {
		schema string
		v6OK   bool
	}{
		{`{"properties":{"n":{"minimum":0}}}`, false},
		{`{"properties":{"n":{"type":"number"}}}`, true},
		{`{"properties":{"n":{"type":"integer"}}}`, false},
	} {
		if err, panicked := v6(tc.schema); !panicked && (err == nil) != tc.v6OK {
			t.Fatalf("v6 alone with %s = %v, want valid=%v", tc.schema, err, tc.v6OK)
		}
		o := newOracle(t, decodeSchema(t, tc.schema), testOpts)
		if err, panicked := o.verdict([]byte(`{"n":1e1000001}`)); err == nil || panicked {
			t.Fatalf("oracle with %s = %v (panicked %v), want the number bound", tc.schema, err, panicked)
		}
		agree(t, mustCompile(t, tc.schema, testOpts), o, []byte(`{"n":1e1000001}`))
	}
}
