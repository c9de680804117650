package textsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// review56Replaced is the reference of JSONReplaced for valid JSON: the
// decoded strings (keys and values) hold more U+FFFD than the text writes,
// as itself or as \ufffd.
func review56Replaced(t *testing.T, raw []byte) bool {
	if !utf8.Valid(raw) {
		return true
	}
	written := bytes.Count(raw, []byte("\uFFFD"))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] == 'u' && strings.EqualFold(string(raw[i+2:i+6]), "fffd") {
			written++
		}
		i++
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	read := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if s, ok := tok.(string); ok {
			read += strings.Count(s, "\uFFFD")
		}
	}
	return read > written
}

func FuzzReview56JSONReplaced(f *testing.F) {
	for _, s := range []string{`{"a":"\ud800"}`, `["\ud800\udc00"]`, `{"\udc00":1}`, `"\ufffd"`, "\"\xff\"",
		`"\\ud800"`, `"\ud83d\ud83d\ude00"`, `"\u00e9\uD800x"`, `[1,"\\\ud800"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		if got, want := JSONReplaced(raw), review56Replaced(t, raw); got != want {
			t.Fatalf("JSONReplaced(%q) = %v, encoding/json reads U+FFFD not written: %v", raw, got, want)
		}
	})
}
