package jsondepth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// sdkCheckMaxDepth is the go-sdk v1.8.0's internal/json checkMaxDepth,
// copied (it refuses a message nested deeper than maxDepth).
func sdkCheckMaxDepth(data []byte, maxDepth int) error {
	var (
		depth    int
		inString bool
		escaped  bool
	)
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}

		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errors.New("too deep")
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// tokenDepth is how deep encoding/json's tokens nest in the valid JSON
// text data. Numbers are read as json.Number: valid JSON such as 1E700
// does not fit a float64.
func tokenDepth(t *testing.T, data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			t.Fatalf("Token(%q): %v", data, err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

var review25Seeds = []string{
	``, `1`, `"["`, `"\"["`, `"\\"[`, `[[]]`, `[{"a":[{}]}]`, `{"a\\":"]"}`,
	`]]]][[`, `"unterminated [[[`, "[\"\xff\\\xff[\"]", `["\u005b"]`, `"\\\\\"[["`,
	`[1,[2,[3]],{"x":{"y":[]}}]`, `{}{}[[]]`, strings.Repeat("[", 50),
	`1E700`, `[[-1e400]]`,
}

// FuzzReview25Of: on any bytes, Of(b) > d exactly when the go-sdk refuses b
// as nested deeper than d; on valid JSON, Of is how deep encoding/json's
// tokens nest.
func FuzzReview25Of(f *testing.F) {
	for i, s := range review25Seeds {
		f.Add([]byte(s), i)
	}
	f.Fuzz(func(t *testing.T, b []byte, d int) {
		d = max(0, d%64)
		got := Of(b)
		if refused := sdkCheckMaxDepth(b, d) != nil; refused != (got > d) {
			t.Fatalf("Of(%q) = %d; the go-sdk with a limit of %d refuses it: %v", b, got, d, refused)
		}
		if json.Valid(b) {
			if want := tokenDepth(t, b); got != want {
				t.Fatalf("Of(%q) = %d; encoding/json's tokens nest %d deep", b, got, want)
			}
		}
	})
}
