package textsafe

import "testing"

func TestJSONReplaced(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":"plain"}`:                false,
		`{"a":"\ud83d\ude00"}`:         false,
		`{"a":"\uD83D\uDE00\n"}`:       false,
		`{"a":"\\ud800"}`:              false, // an escaped backslash, then text
		`{"a":"\ufffd"}`:               false,
		`{"a":"\ud800"}`:               true,
		`{"a":"\udc00\ud800"}`:         true,
		`{"a":"\ud800\u0041"}`:         true,
		`{"\ud800":1}`:                 true,
		`{"a":"\\\ud800"}`:             true,
		"{\"a\":\"\xff\"}":             true,
		`{"a":"\udbff\udfff","b":"x"}`: false,
	} {
		if got := JSONReplaced([]byte(in)); got != want {
			t.Errorf("JSONReplaced(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestPlain(t *testing.T) {
	for in, want := range map[string]bool{
		"plain text, é and 😀": true,
		"\uFFFD":              true,
		"tab\there":           false,
		"del\x7f":             false,
		"bidi\u202e":          false,
		"sep\u2028":           false,
		"bad\xff":             false,
		"vs\U000E0100":        false,
	} {
		if got := Plain(in); got != want {
			t.Errorf("Plain(%q) = %v, want %v", in, got, want)
		}
	}
}
