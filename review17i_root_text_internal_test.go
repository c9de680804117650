package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpguard/mcpguard/audit"
	"github.com/mcpguard/mcpguard/confirm"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encoding/json reads invalid UTF-8 and an escaped lone UTF-16 surrogate
// ("\ud800", or "\udc00" first) as U+FFFD, so the validator checked
// another string than a downstream that keeps them would read, and the
// confirmation and multi round-trip steps, which refuse to hash such
// arguments, then failed after validation. Both validation paths (the fast
// one and the reference), in strict and lenient mode, refuse them as
// INVALID_ARGUMENTS, in values and in member names at any depth; valid
// text, surrogate pairs and an escaped backslash before "u" pass.
func TestReview17iValidatorRefusesBrokenText(t *testing.T) {
	const want = "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"
	schemas := map[string]string{
		// In the fast subset.
		"fast": `{"type":"object","properties":{"target":{"type":"string"},"any":true}}`,
		// propertyNames is outside it: the reference path runs.
		"reference": `{"type":"object","properties":{"target":{"type":"string"},"any":true},"propertyNames":{"maxLength":20}}`,
	}
	refused := []string{
		"{\"target\":\"\xff\"}",
		"{\"target\":\"ab\xc3\"}",
		"{\"target\":\"\xed\xa0\x80\"}", // a surrogate written as UTF-8
		`{"target":"\ud800"}`,
		`{"target":"\udc00"}`,
		`{"target":"\udc00\ud800"}`,
		`{"target":"\ud800x"}`,
		`{"target":"\ud800\u0041"}`,
		`{"target":"\ud800\ud800"}`,
		`{"target":"a\\\ud800"}`,
		`{"any":{"deep":["\uDBFF"]}}`,
		`{"\ud800":1}`,
		"{\"any\":{\"k\xfe\":1}}",
		// Outside the schema's reach, too: after an unknown field would be
		// refused, and in a value that fails its type.
		`{"target":1,"any":"\ud800"}`,
		"{\"any\":\"\xff\",\"target\":1}",
	}
	passed := []string{
		`{"target":"\ud83d\ude00"}`,
		`{"target":"\uD83D\uDE00"}`,
		"{\"target\":\"\xf0\x9f\x98\x80\"}",
		`{"target":"\\ud800"}`,
		`{"target":"\\\\ud800"}`,
		`{"target":"\ufffd"}`,
		"{\"target\":\"\xef\xbf\xbd\"}",
		`{"target":"\uffff\u0041\ue000"}`,
		`{"any":{"\ud83d\ude00":1}}`,
		``,
	}
	for name, schema := range schemas {
		for _, lenient := range []bool{false, true} {
			v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{Lenient: lenient, MaxStringBytes: 64})
			if err != nil {
				t.Fatal(err)
			}
			if (v.fast != nil) != (name == "fast") {
				t.Fatalf("test premise: the %s schema should run the %s path (fast: %v)", name, name, v.fast != nil)
			}
			for _, raw := range refused {
				for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
					_, err := f(json.RawMessage(raw))
					var de *DenialError
					if !errors.As(err, &de) || de.Code != CodeInvalidArguments || de.Message != want {
						t.Errorf("%s schema, lenient %v: %s(%q) = %v; want INVALID_ARGUMENTS %q", name, lenient, which, raw, err, want)
					}
				}
			}
			for _, raw := range passed {
				for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
					if _, err := f(json.RawMessage(raw)); err != nil {
						t.Errorf("%s schema, lenient %v: %s(%q) = %v; want valid", name, lenient, which, raw, err)
					}
				}
			}
		}
	}
}

// The reference's order holds on both paths: malformed JSON and duplicate
// names are reported before broken text (they are found first), broken
// text before a string out of bounds or a schema violation.
func TestReview17iBrokenTextOrder(t *testing.T) {
	schemas := map[string]string{
		"fast":      `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"]}`,
		"reference": `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"],"propertyNames":{"maxLength":20}}`,
	}
	long := strings.Repeat("x", 65)
	for _, tc := range []struct{ raw, want string }{
		{`{"a":"\ud800","b":1,}`, "arguments are not valid JSON"},
		{`{"a":"\ud800","b":1} x`, "arguments have trailing data"},
		{`{"a":"\ud800","b":1,"b":2}`, `argument "b" appears twice`},
		{`{"a":"\ud800","b":"x"}`, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{`{"b":"x","a":"\ud800"}`, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{`{"a":"` + long + `","b":1,"c":"\udfff"}`, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{`{"a":"\udfff","b":1,"c":"` + long + `"}`, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{`{"a":"\udfff"}`, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{`["\udfff"]`, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
	} {
		for name, schema := range schemas {
			v, err := NewValidator(json.RawMessage(schema), &ValidationOptions{MaxStringBytes: 64})
			if err != nil {
				t.Fatal(err)
			}
			for which, f := range map[string]func(json.RawMessage) (any, error){"check": v.check, "Validate": v.Validate} {
				_, err := f(json.RawMessage(tc.raw))
				var de *DenialError
				if !errors.As(err, &de) || de.Message != tc.want {
					t.Errorf("%s schema: %s(%q) = %v; want %q", name, which, tc.raw, err, tc.want)
				}
			}
		}
	}
}

// Whatever refusal of confirm.ArgsSHA256 could still reach the
// confirmation step (validation refuses every one first: a malformed
// document, a duplicate, broken text) is told as what it is, not always
// as "arguments are not valid JSON". The step is called directly with
// arguments validation never let through.
func TestReview17iConfirmStepSaysWhy(t *testing.T) {
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "wipe", Class: policy.Write, Confirm: true}}, WriteAllowlist: []string{"wipe"}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(pol, AuthenticatorFunc(func(context.Context, mcp.Request) (*Identity, error) { return nil, nil }),
		&Options{Confirmer: s, Audit: audit.SinkFunc(func(context.Context, *audit.Event) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ raw, want string }{
		{`{"target":"\ud800"}`, "arguments hold invalid UTF-8 or a lone UTF-16 surrogate"},
		{`{"target":"x","Target":"y"}`, "arguments name an object member twice (or two that differ only in letter case)"},
		{`{"target":`, "arguments are not valid JSON"},
		{`{} {}`, "arguments have trailing data"},
	} {
		c := &call{name: "wipe", raw: json.RawMessage(tc.raw), id: &Identity{Principal: &policy.Principal{Subject: "bob"}}, start: time.Now()}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "wipe", Arguments: c.raw}}
		res, done := g.confirmStep(context.Background(), req, c, ToolOptions{}, nil)
		if done || res != nil || c.denial == nil || c.denial.Code != CodeInvalidArguments || c.denial.Message != tc.want {
			t.Errorf("confirmStep(%q) = %v, %v, denial %v; want INVALID_ARGUMENTS %q", tc.raw, res, done, c.denial, tc.want)
		}
	}
}

// The check is linear: a megabyte of escaped surrogate pairs with a lone
// one at the end is refused in milliseconds on both paths (a scan that
// started over at each escape would take minutes).
func TestReview17iBrokenTextLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"any":[`)
	for b.Len() < 1<<20 {
		b.WriteString(`"\ud83d\ude00\\u\ud800\udc00",`)
	}
	b.WriteString(`"\udbff"]}`)
	raw := json.RawMessage(b.String())
	for name, schema := range map[string]string{
		"fast":      `{"type":"object","properties":{"any":true}}`,
		"reference": `{"type":"object","properties":{"any":true},"propertyNames":{"maxLength":20}}`,
	} {
		v, err := NewValidator(json.RawMessage(schema), nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = v.check(raw)
		var de *DenialError
		if !errors.As(err, &de) || de.Message != brokenTextMessage {
			t.Fatalf("%s path: check(%d bytes ending in a lone surrogate) = %v; want %q", name, len(raw), err, brokenTextMessage)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s path: refusing %d bytes of escapes took %v; well under 100ms is expected", name, len(raw), d)
		}
	}
}
