package mcpguard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// An argument name the caller chose is echoed in a refusal: in its message
// (`unknown argument "…"`, `argument "…" appears twice`, `argument "…" is
// longer than …`) and, as a JSON pointer, in details.field. A name may be
// up to MaxStringBytes long (64 KiB by default), and a tool-error answer
// carries the body twice (text and structured content): a 60 KiB name came
// back four times. The fast path cut the name in its messages at 64 bytes;
// the reference path did not, and neither bounded details.field. Both
// paths now give the same bounded message, quote the name as strconv.Quote
// does (a bidi override is escaped, not sent raw), and leave out a field
// longer than 256.
func TestReview20RefusalsBoundTheCallersNames(t *testing.T) {
	schemas := map[string]string{
		"fast":      `{"type":"object","properties":{"a":{"type":"string","maxLength":3},"o":{"type":"object","properties":{"p":{}}}}}`,
		"reference": `{"type":"object","properties":{"a":{"type":"string","maxLength":3},"o":{"type":"object","properties":{"p":{}}}},"propertyNames":{"maxLength":70000}}`,
	}
	long := strings.Repeat("n", 60000)
	bidi := "x\u202eevil"
	cases := []struct {
		name, raw string
		lenient   bool
	}{
		{"unknown_long", `{"` + long + `":1}`, false},
		{"unknown_nested_long", `{"o":{"` + long + `":1},"a":"x"}`, false},
		{"duplicate_long", `{"` + long + `":1,"` + long + `":2}`, true},
		{"duplicate_nested_long", `{"o":{"` + long + `":1,"` + long + `":2}}`, true},
		{"too_long_under_long_name", `{"o":{"` + long + `":"` + strings.Repeat("v", 70000) + `"}}`, true},
		{"unknown_bidi", `{"` + bidi + `":1}`, false},
		{"duplicate_bidi", `{"` + bidi + `":1,"` + bidi + `":2}`, true},
	}
	for _, tc := range cases {
		msgs := map[string]string{}
		for name, schema := range schemas {
			v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: tc.lenient})
			if err != nil {
				t.Fatal(err)
			}
			if (v.fast != nil) != (name == "fast") {
				t.Fatalf("test premise: the %s schema should run the %s path", name, name)
			}
			for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
				_, err := f(json.RawMessage(tc.raw))
				var de *DenialError
				if !errors.As(err, &de) || de.Code != CodeInvalidArguments {
					t.Fatalf("%s: %s schema, %s: %v; want INVALID_ARGUMENTS", tc.name, name, which, err)
				}
				if len(de.Message) > 200 {
					t.Errorf("%s: %s schema, %s: message of %d bytes: %.120q…", tc.name, name, which, len(de.Message), de.Message)
				}
				if strings.Contains(de.Message, "\u202e") {
					t.Errorf("%s: %s schema, %s: message %q holds a raw bidi override", tc.name, name, which, de.Message)
				}
				if f, ok := de.Details["field"].(string); ok && len(f) > maxFieldBytes {
					t.Errorf("%s: %s schema, %s: details.field of %d bytes", tc.name, name, which, len(f))
				}
				body, _ := json.Marshal(de.Result().StructuredContent)
				if len(body) > 1024 {
					t.Errorf("%s: %s schema, %s: refusal of %d bytes", tc.name, name, which, len(body))
				}
				msgs[name+" "+which] = de.Message
			}
		}
		if msgs["fast check"] != msgs["reference check"] && !strings.HasPrefix(tc.name, "duplicate_nested") {
			t.Errorf("%s: the paths disagree: fast %.150q, reference %.150q", tc.name, msgs["fast check"], msgs["reference check"])
		}
	}
}

// A short name is still given whole, and its pointer too.
func TestReview20RefusalsKeepShortNames(t *testing.T) {
	v, err := NewValidator(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"propertyNames":{"maxLength":99}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("k", 64)
	_, err = v.check(json.RawMessage(`{"` + name + `":1}`))
	var de *DenialError
	if !errors.As(err, &de) || de.Message != `unknown argument "`+name+`"` || de.Details["field"] != "/"+name {
		t.Errorf("check = %v (details %v); want unknown argument %q with its field", err, de.Details, name)
	}
}

// details.field is a JSON pointer (RFC 6901): "~" and "/" in a name are
// escaped as "~0" and "~1". The reference path joined the names as they
// were, so `{"a/b":1}` was reported at "/a/b", a field that does not
// exist (the fast path escaped them).
func TestReview20FieldIsAPointer(t *testing.T) {
	schemas := map[string]string{
		"fast":      `{"type":"object","properties":{"o":{"type":"object","properties":{"p":{"type":"integer"}}}}}`,
		"reference": `{"type":"object","properties":{"o":{"type":"object","properties":{"p":{"type":"integer"}}}},"propertyNames":{"maxLength":99}}`,
	}
	for _, tc := range []struct{ raw, field string }{
		{`{"a/b~c":1}`, "/a~1b~0c"},
		{`{"o":{"x/~y":1}}`, "/o/x~1~0y"},
		{`{"o":{"p":"s"},"~":1}`, "/o/p"},
	} {
		for name, schema := range schemas {
			v, err := NewValidator(json.RawMessage(schema), nil)
			if err != nil {
				t.Fatal(err)
			}
			for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
				_, err := f(json.RawMessage(tc.raw))
				var de *DenialError
				if !errors.As(err, &de) || de.Details["field"] != tc.field {
					t.Errorf("%s schema: %s(%s) = %v, field %v; want field %q", name, which, tc.raw, err, de.Details["field"], tc.field)
				}
			}
		}
	}
}
