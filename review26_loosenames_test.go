package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// v2FoldName is encoding/json/v2's foldName (fold.go in Go 1.26's
// encoding/json/v2): '_' and '-' dropped, the rest folded as
// strings.EqualFold compares. Two names it makes equal are one struct field
// to v2 under MatchCaseInsensitiveNames or a `case:ignore` tag.
func v2FoldName(s string) string {
	s = strings.NewReplacer("_", "", "-", "").Replace(s)
	return strings.ToUpper(strings.ToLower(strings.ToValidUTF8(s, "\ufffd")))
}

// v2Handler decodes its top-level arguments as encoding/json/v2 does a
// struct with the one field `json:"<field>,case:ignore"` with
// jsontext.AllowDuplicateNames (the last member whose name folds like the
// field's wins), and stores what it read. (Checked against Go 1.26's
// encoding/json/v2 built with GOEXPERIMENT=jsonv2: {"amount":5,"a_mount":1e9}
// and {"A-MOUNT":1e9} read amount 1e9.)
func v2Handler(field string, got *atomic.Int64) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			var n float64
			if k, _ := tok.(string); v2FoldName(k) == v2FoldName(field) && json.Unmarshal(v, &n) == nil {
				got.Store(int64(n))
			}
		}
		return textResult("paid"), nil
	}
}

// looseGuard installs a guard (lenient or strict validation) on a server
// whose tool pay has schema and the v2 handler of field, and connects.
func looseGuard(t *testing.T, schema, field string, lenient bool, got *atomic.Int64) *mcp.ClientSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "loose", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pay", InputSchema: json.RawMessage(schema)}, v2Handler(field, got))
	pol, err := policy.New(policy.Config{Tools: []policy.ToolRule{{Name: "pay", Class: policy.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	opts := &mcpguard.Options{Logger: quiet}
	if lenient {
		opts.Validation = &mcpguard.ValidationOptions{Lenient: true}
	}
	g, err := mcpguard.New(pol, fixed(bob), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Install(srv); err != nil {
		t.Fatal(err)
	}
	return connectPlain(t, srv, nil)
}

// TestReview26LooseNameReachesNoHandler: where a schema admits members it
// does not declare (lenient mode, additionalProperties, patternProperties),
// a member whose name equals a declared property's once '_' and '-' are
// dropped and letter case ignored ("a_mount", "-AMOUNT-" for "amount") passed
// the letter-case check, while a handler decoding with encoding/json/v2's
// case-insensitive matching read it as amount: 1e9 past a maximum of 100.
// Such a member is refused, on the guard's pipeline (fast path or not) and
// by Validate alike, with a message that says what differs.
func TestReview26LooseNameReachesNoHandler(t *testing.T) {
	const amount = `"amount":{"type":"number","maximum":100}`
	for _, sc := range []struct {
		name, schema string
		lenient      bool
	}{
		{"lenient", `{"type":"object","properties":{` + amount + `}}`, true},
		{"strict_additional_true", `{"type":"object","properties":{` + amount + `},"additionalProperties":true}`, false},
		{"strict_additional_number", `{"type":"object","properties":{` + amount + `},"additionalProperties":{"type":"number"}}`, false},
		{"strict_pattern", `{"type":"object","properties":{` + amount + `},"patternProperties":{"^[a-zA-Z_-]+$":{}}}`, false},
		{"lenient_allof", `{"type":"object","allOf":[{"properties":{` + amount + `}}]}`, true},
		{"strict_allof", `{"type":"object","allOf":[{"properties":{` + amount + `}}]}`, false},
	} {
		var got atomic.Int64
		cs := looseGuard(t, sc.schema, "amount", sc.lenient, &got)
		v, err := mcpguard.NewValidator(json.RawMessage(sc.schema), &mcpguard.ValidationOptions{Lenient: sc.lenient})
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range []string{
			`{"a_mount":1e9}`,
			`{"amount":5,"a_mount":1e9}`,
			`{"-AMOUNT-":1e9}`,
			`{"amo-unt":1e9}`,
			`{"_AM_ount_":1e9}`,
		} {
			got.Store(0)
			res, err := call(t, cs, "pay", json.RawMessage(args))
			if err != nil {
				t.Fatalf("%s: %s: %v", sc.name, args, err)
			}
			if !res.IsError || got.Load() > 100 {
				t.Errorf("%s: %s passed the guard; the v2 handler read amount %d", sc.name, args, got.Load())
			} else if code := errorCode(t, res); code != string(mcpguard.CodeInvalidArguments) {
				t.Errorf("%s: %s: code %s, want %s", sc.name, args, code, mcpguard.CodeInvalidArguments)
			}
			_, err = v.Validate(json.RawMessage(args))
			if err == nil || !errors.Is(err, mcpguard.ErrInvalidArguments) {
				t.Errorf("%s: Validate(%s) = %v, want ErrInvalidArguments", sc.name, args, err)
				continue
			}
		}
		// A lone variant is named with what differs (strict_allof's closed
		// schema refuses it as unknown first).
		if sc.name == "strict_allof" {
			continue
		}
		if _, err := v.Validate(json.RawMessage(`{"a_mount":1e9}`)); err == nil ||
			!strings.Contains(err.Error(), `differs from the declared argument "amount" only in letter case, '_' or '-'`) {
			t.Errorf("%s: Validate({\"a_mount\":1e9}) = %v, want it to say what differs", sc.name, err)
		}
	}
}

// TestReview26LooseDuplicateReachesNoHandler: two members of one object
// whose names are one to encoding/json/v2's case-insensitive matching
// ({"amount":5,"a_mount":1e9}) are duplicates, as "amount" and "AMOUNT"
// are: a schema that constrains "amount" by a pattern (no declared
// property, so no letter-case check) saw 5 while a v2 handler allowing
// duplicates read 1e9.
func TestReview26LooseDuplicateReachesNoHandler(t *testing.T) {
	const schema = `{"type":"object","patternProperties":{"^amount$":{"type":"number","maximum":100}}}`
	var got atomic.Int64
	cs := looseGuard(t, schema, "amount", true, &got)
	v, err := mcpguard.NewValidator(json.RawMessage(schema), &mcpguard.ValidationOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"amount":5,"a_mount":1e9}`,
		`{"amount":5,"AMOUNT-":1e9}`,
		`{"amount":5,"x":1,"y":2,"z":3,"a":4,"b":5,"c":6,"d":7,"e":8,"f":9,"g":10,"h":11,"i":12,"j":13,"k":14,"l":15,"m":16,"a__mount":1e9}`,
	} {
		got.Store(0)
		res, err := call(t, cs, "pay", json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if !res.IsError || got.Load() > 100 {
			t.Errorf("%.40s...: passed the guard; the v2 handler read amount %d", args, got.Load())
		}
		if _, err := v.Validate(json.RawMessage(args)); err == nil {
			t.Errorf("%.40s...: the reference path passed it", args)
		}
	}
}

// TestReview26LooseNamesBothDeclared: a schema that declares two names
// alike once '_' and '-' are dropped ("user_id" and "userid") takes either
// alone, as before: a declared name is never refused for resembling
// another. Both in one object are duplicates, as two declared names that
// differ only in letter case ("id" and "ID") are: a handler matching names
// loosely may read both into one field. A name declared by neither is
// refused naming the smallest declared one.
func TestReview26LooseNamesBothDeclared(t *testing.T) {
	const schema = `{"type":"object","properties":{"userid":{"type":"integer","maximum":100},"user_id":{"type":"integer","maximum":100}}}`
	for _, lenient := range []bool{false, true} {
		var got atomic.Int64
		cs := looseGuard(t, schema, "user_id", lenient, &got)
		v, err := mcpguard.NewValidator(json.RawMessage(schema), &mcpguard.ValidationOptions{Lenient: lenient})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args string
			want string // "" passes, else a part of the message
		}{
			{`{"user_id":7}`, ""},
			{`{"userid":7}`, ""},
			{`{"user_id":7,"userid":8}`, `argument "userid" appears twice`},
			{`{"userid":7,"user_id":8}`, `argument "user_id" appears twice`},
		} {
			got.Store(0)
			res, err := call(t, cs, "pay", json.RawMessage(tc.args))
			if err != nil {
				t.Fatalf("%s: %v", tc.args, err)
			}
			if res.IsError != (tc.want != "") {
				t.Errorf("lenient %v: %s: IsError %v, want %v", lenient, tc.args, res.IsError, tc.want != "")
			}
			_, err = v.Validate(json.RawMessage(tc.args))
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("lenient %v: Validate(%s) = %v, want %q", lenient, tc.args, err, tc.want)
			}
		}
		if !lenient {
			continue
		}
		const want = `argument "USER-ID" differs from the declared argument "user_id" only in letter case, '_' or '-'`
		if _, err := v.Validate(json.RawMessage(`{"USER-ID":1e9}`)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate({\"USER-ID\":1e9}) = %v, want %q", err, want)
		}
	}
}

// TestReview26LooseNamesRefuseNothingElse: names with '_' or '-' that are
// alike to no other name at their position pass, in lenient and strict
// mode, on the guard's pipeline and by Validate; so do names alike to a
// property declared at another position.
func TestReview26LooseNamesRefuseNothingElse(t *testing.T) {
	const schema = `{"type":"object","properties":{"amount":{"type":"number","maximum":100},"max_amount":{"type":"number"},` +
		`"note-id":{"type":"string"},"meta":{"type":"object","additionalProperties":true}},"additionalProperties":true}`
	var got atomic.Int64
	for _, lenient := range []bool{false, true} {
		cs := looseGuard(t, schema, "amount", lenient, &got)
		v, err := mcpguard.NewValidator(json.RawMessage(schema), &mcpguard.ValidationOptions{Lenient: lenient})
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range []string{
			`{"amount":5,"max_amount":1e9,"note-id":"x"}`,
			`{"amount":5,"mount":1,"amounts":2,"b_mount":3,"x_y":4,"-":5}`,
			`{"amount":5,"meta":{"a_mount":1e9,"Note_Id":"x"}}`,
			`{"amount":5,"meta":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"a-b":17,"c_d":18}}`,
		} {
			res, err := call(t, cs, "pay", json.RawMessage(args))
			if err != nil || res.IsError {
				t.Errorf("lenient %v: %.50s: refused: %v %s", lenient, args, err, mustJSON(res))
			}
			if _, err := v.Validate(json.RawMessage(args)); err != nil {
				t.Errorf("lenient %v: Validate(%.50s) = %v", lenient, args, err)
			}
		}
	}
}
