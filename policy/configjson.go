package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpguard/mcpguard/internal/jsonnum"
)

// The JSON readers of ParseConfig. Each reads one value, found at the
// path at, of a document that is valid JSON, and refuses another kind of
// value with an error naming at.

// required refuses an object at at that lacks one of names.
func required(at string, seen map[string]bool, names ...string) error {
	for _, n := range names {
		if !seen[n] {
			return fmt.Errorf("policy: config: %s: %q is required", at, n)
		}
	}
	return nil
}

// object calls f with each member of the JSON object v, found at at, in
// the document's order, and returns the names it saw. It refuses a v that
// is not an object, a member whose name is not exactly one of the list
// known (names separated by ", "), and a member given twice.
func object(v []byte, at string, known string, f func(key, at string, v []byte) error) (map[string]bool, error) {
	if err := want(v, at, '{', "an object"); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.Token() // {
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("policy: config: %s: %v", at, err)
		}
		key, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("policy: config: %s: %v", at, err)
		}
		kat := memberPath(at, key)
		switch {
		case seen[key]:
			return nil, fmt.Errorf("policy: config: %s: given twice", kat)
		case !member(known, key):
			for k := range strings.SplitSeq(known, ", ") {
				if strings.EqualFold(k, key) {
					return nil, fmt.Errorf("policy: config: %s: unknown member; member names are lower case: %q", kat, k)
				}
			}
			return nil, fmt.Errorf("policy: config: %s: unknown member; want one of %s", kat, known)
		}
		seen[key] = true
		if err := f(key, kat, val); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// member reports whether key is one of the names of the list known.
func member(known, key string) bool {
	for k := range strings.SplitSeq(known, ", ") {
		if k == key {
			return true
		}
	}
	return false
}

// memberPath is the path of the member key of the object at at: at.key,
// or at["key"] for a key that is not a plain word.
func memberPath(at, key string) string {
	plain := key != "" && len(key) <= 64
	for i := 0; plain && i < len(key); i++ {
		c := key[i]
		plain = c == '_' || c == '-' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	switch {
	case !plain:
		return at + "[" + quoted(key) + "]"
	case at == "":
		return key
	}
	return at + "." + key
}

// array calls f with each element of the JSON array v, found at at.
func array(v []byte, at string, f func(at string, v []byte) error) error {
	if err := want(v, at, '[', "an array"); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.Token() // [
	for i := 0; dec.More(); i++ {
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return fmt.Errorf("policy: config: %s: %v", at, err)
		}
		if err := f(at+"["+strconv.Itoa(i)+"]", el); err != nil {
			return err
		}
	}
	return nil
}

// strs reads an array of strings. An empty array is nil.
func strs(v []byte, at string) ([]string, error) {
	var out []string
	err := array(v, at, func(at string, v []byte) error {
		s, err := str(v, at)
		out = append(out, s)
		return err
	})
	return out, err
}

// name reads a string that names something and may not be empty.
func name(v []byte, at string) (string, error) {
	s, err := str(v, at)
	if err == nil && s == "" {
		err = fmt.Errorf("policy: config: %s: empty", at)
	}
	return s, err
}

func str(v []byte, at string) (string, error) {
	if err := want(v, at, '"', "a string"); err != nil {
		return "", err
	}
	if halfSurrogate(v) {
		return "", fmt.Errorf(`policy: config: %s: a \u escape of half a surrogate pair (encoding/json would read U+FFFD)`, at)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("policy: config: %s: %v", at, err)
	}
	return s, nil
}

func number(v []byte, at string) (float64, error) {
	if err := want(v, at, '0', "a number"); err != nil {
		return 0, err
	}
	f, ok := jsonnum.Float(string(v)) // not ParseFloat: see jsonnum.Float
	if !ok {
		return 0, fmt.Errorf("policy: config: %s: %.40s: not a finite float64", at, v)
	}
	return f, nil
}

// loosens reports whether the float64 f that the JSON number text n reads
// as is, as an argument limit's Max, above n: a call's number is compared
// with the shortest decimal that reads as f (see jsonnum.Above), which
// for a number written with more digits than a float64 holds may be the
// larger (9007199254740995 reads as 9007199254740996). n < that decimal
// exactly when -n is above -f.
func loosens(n string, f float64) bool {
	return jsonnum.Above(negated(n), -f)
}

func boolean(v []byte, at string) (bool, error) {
	if err := want(v, at, 't', "true or false"); err != nil {
		return false, err
	}
	return v[0] == 't', nil
}

// want refuses the JSON value v, found at at, unless it is of the kind
// whose first byte is k ('0' for a number, 't' for a boolean).
func want(v []byte, at string, k byte, what string) error {
	got := kind(v)
	if got == k {
		return nil
	}
	names := map[byte]string{'{': "an object", '[': "an array", '"': "a string", '0': "a number", 't': "a boolean", 'n': "null"}
	if at == "" {
		return fmt.Errorf("policy: config: want %s, not %s", what, names[got])
	}
	return fmt.Errorf("policy: config: %s: want %s, not %s", at, what, names[got])
}

// kind returns the first byte of the JSON value v, with '0' for any
// number and 't' for either boolean.
func kind(v []byte) byte {
	switch c := v[0]; c {
	case '{', '[', '"', 'n':
		return c
	case 't', 'f':
		return 't'
	}
	return '0'
}

// halfSurrogate reports whether the JSON string v has a \u escape of a
// surrogate that is not one half of an escaped pair, high then low.
func halfSurrogate(v []byte) bool {
	hex := func(i int) (rune, bool) {
		if i+6 > len(v) || v[i] != '\\' || v[i+1] != 'u' {
			return 0, false
		}
		r, err := strconv.ParseUint(string(v[i+2:i+6]), 16, 16)
		return rune(r), err == nil
	}
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			continue
		}
		r, ok := hex(i)
		if !ok {
			i++ // another escape: skip the escaped byte
			continue
		}
		switch {
		case 0xdc00 <= r && r <= 0xdfff:
			return true
		case 0xd800 <= r && r <= 0xdbff:
			lo, ok := hex(i + 6)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		}
		i += 5
	}
	return false
}

// quoted is s quoted for an error message, cut after 64 bytes.
func quoted(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
