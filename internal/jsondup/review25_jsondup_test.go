package jsondup

import (
	"bytes"
	"encoding/json"
	"testing"
)

// review25Oracle reports whether encoding/json, decoding data (valid JSON)
// into maps, loses a member (two members of one object decode to one
// name: exact duplicates, escaped spellings, invalid UTF-8 and lone
// surrogates read as U+FFFD), or, with fold, whether an object it decodes
// holds two names that bytes.EqualFold matches (encoding/json would give
// both to one struct field). It shares no code with Member.
func review25Oracle(t *testing.T, data []byte, fold bool) bool {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e400 is valid JSON
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", data, err)
	}
	// Every member of the text has one ':' outside strings.
	written := 0
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && c == ':':
			written++
		}
	}
	decoded, folded := 0, false
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			decoded += len(v)
			var names []string
			for k, x := range v {
				for _, n := range names {
					if bytes.EqualFold([]byte(n), []byte(k)) {
						folded = true
					}
				}
				names = append(names, k)
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return decoded != written || fold && folded
}

var review25Seeds = []string{
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":1,"A":2}`, `{"k":1,"\u212a":2}`,
	`{"\ud800":1,"\udc00":2}`, `{"\ud800":1,"\ufffd":2}`, "{\"\xff\":1,\"\xfe\":2}",
	"{\"\xf0\x9f\x98\":1,\"\xff\xff\xff\":2}", "{\"\xf0\x9f\x98\":1,\"\xff\":2}",
	`{"\ud83d\ude00":1,"😀":2}`, `{"\ud83d\ude00":1,"\ud83d\ude01":2}`,
	`{"a\u0000":1,"a":2}`, `{"a\u0000b":1,"a\u0000c":2}`, `{"":1,"":2}`,
	`{"a":{"a":1},"b":[{"a":1,"b":{"a":1}}]}`, `[{"x":1},{"x":1}]`,
	`{"x":1e400,"y":-0,"z":0.0,"w":1E+2,"v":123456789012345678901234567890,"y":1}`,
	`{"a":"\"","a\"":1,"a\\":2,"a\\\"":3}`, `{"a":"}","b":"{","a":1}`,
	`{"σ":1,"ς":2,"Σ":3}`, `{"ß":1,"SS":2}`, `{"İ":1,"i":2,"ı":3}`,
	` { "a" : 1 , "a" : 2 } `, "\t{\r\n\"a\":1}\n", `{"a\/b":1,"a/b":2}`,
}

// TestReview25MemberIsEncodingJSONs: on valid JSON, Member finds a
// duplicate exactly when encoding/json loses a member to one (or, with
// folding, would give two members to one struct field): escaped names,
// pairs and raw runes, lone surrogates, invalid UTF-8 of several lengths,
// NUL, names with quotes and brackets, numbers beyond float64.
func TestReview25MemberIsEncodingJSONs(t *testing.T) {
	all := func(int) bool { return true }
	for _, s := range review25Seeds {
		data := []byte(s)
		if !json.Valid(data) {
			t.Fatalf("seed %q is not valid JSON", s)
		}
		for _, fold := range []bool{false, true} {
			var f func(int) bool
			if fold {
				f = all
			}
			_, _, found := Member(data, f)
			if want := review25Oracle(t, data, fold); found != want {
				t.Errorf("Member(%q, fold %v) found = %v; encoding/json: %v", s, fold, found, want)
			}
		}
	}
}

// FuzzReview25Member compares Member with review25Oracle on valid JSON.
func FuzzReview25Member(f *testing.F) {
	for i, s := range review25Seeds {
		f.Add([]byte(s), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, fold bool) {
		if len(data) > 4096 || !json.Valid(data) {
			return
		}
		var fn func(int) bool
		if fold {
			fn = func(int) bool { return true }
		}
		name, _, found := Member(data, fn)
		if want := review25Oracle(t, data, fold); found != want {
			t.Fatalf("Member(%q, fold %v) = %q, %v; encoding/json: %v", data, fold, name, found, want)
		}
	})
}

// TestReview25NotJSONFindsNothingPastTheError: text encoding/json refuses
// as a whole (a byte order mark, whitespace JSON does not have, a second
// value) is left to it, but what comes before the error is still looked at.
func TestReview25NotJSONFindsNothingPastTheError(t *testing.T) {
	for _, tc := range []struct {
		data  string
		found bool
	}{
		{"\xef\xbb\xbf{\"a\":1,\"a\":2}", false},
		{"\v{\"a\":1,\"a\":2}", false},
		{"\u00a0{\"a\":1,\"a\":2}", false},
		{`{"a":1,"a":2} x`, true},
		{`{"a":1} {"a":2}`, false},
		{`{"a":1}{"b":1,"b":2}`, true}, // a later value is read too
	} {
		_, _, found := Member([]byte(tc.data), nil)
		if found != tc.found {
			t.Errorf("Member(%q) found = %v, want %v", tc.data, found, tc.found)
		}
		if json.Valid([]byte(tc.data)) {
			t.Errorf("%q is valid JSON; the test wants text encoding/json refuses", tc.data)
		}
	}
}
