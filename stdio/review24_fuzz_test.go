package stdio

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/mcpguard/mcpguard/internal/jsondepth"
)

// review24WalkAgrees fails unless the walk in place reads v, a valid JSON
// value, as encoding/json does: valueEnd ends it at its end, numbersFit
// tells whether it decodes into an any, elements gives an array's
// elements as json.RawMessage holds them, and members an object's names
// (decoded) and values in order, repeated names included.
func review24WalkAgrees(t *testing.T, v []byte) {
	t.Helper()
	if end := valueEnd(v, 0); end != len(v) {
		t.Fatalf("valueEnd(%q, 0) = %d, want %d", v, end, len(v))
	}
	var anyV any
	if fit, err := numbersFit(v), json.Unmarshal(v, &anyV); fit != (err == nil) {
		t.Fatalf("numbersFit(%q) = %v, decoding into an any: %v", v, fit, err)
	}
	switch v[0] {
	case '[':
		var want []json.RawMessage
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		elements(v, func(e []byte) bool { got = append(got, e); return true })
		if len(got) != len(want) {
			t.Fatalf("elements(%q): %d, encoding/json %d", v, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("elements(%q)[%d] = %q, encoding/json %q", v, i, got[i], want[i])
			}
		}
	case '{':
		type member struct{ name, value []byte }
		var want []member
		dec := json.NewDecoder(bytes.NewReader(v))
		if _, err := dec.Token(); err != nil { // {
			t.Fatal(err)
		}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			var value json.RawMessage
			if err := dec.Decode(&value); err != nil {
				t.Fatal(err)
			}
			want = append(want, member{[]byte(name.(string)), value})
		}
		if _, err := dec.Token(); err != nil { // }
			t.Fatal(err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("after %q: %v, want the end", v, err)
		}
		var got []member
		members(v, func(name, value []byte) { got = append(got, member{name, value}) })
		if len(got) != len(want) {
			t.Fatalf("members(%q): %d, encoding/json %d", v, len(got), len(want))
		}
		for i := range got {
			// A name of invalid UTF-8 is handed out as is; encoding/json
			// reads each invalid byte as U+FFFD.
			nameOK := bytes.Equal(got[i].name, want[i].name) || !utf8.Valid(got[i].name)
			if !nameOK || !bytes.Equal(got[i].value, want[i].value) {
				t.Fatalf("members(%q)[%d] = %q: %q, encoding/json %q: %q", v, i, got[i].name, got[i].value, want[i].name, want[i].value)
			}
		}
	}
}

// FuzzReview24CheckMessage holds the line check's walk in place against
// encoding/json on any valid JSON value within the go-sdk's depth, and
// checkMessage against jsonrpc.DecodeMessage on any such object (as
// TestReview24bMessageAgreesWithDecodeMessage does on generated ones),
// the answer to one it refuses as encoding/json writes it. It is cheaper
// than FuzzCheckLine (no transport), so it tries more lines a second.
func FuzzReview24CheckMessage(f *testing.F) {
	r := rand.New(rand.NewPCG(24, 4))
	for range 200 {
		f.Add([]byte(review24bMessage(r)))
	}
	for _, tt := range checkLineCases {
		f.Add([]byte(tt.line))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v := bytes.Trim(data, " \t\r\n")
		if len(v) == 0 || !json.Valid(v) || jsondepth.Of(v) > maxDepth {
			t.Skip("not one JSON value within the depth")
		}
		review24WalkAgrees(t, v)
		if v[0] == '{' {
			review24bAgreeOnMessage(t, string(v))
		}
	})
}
