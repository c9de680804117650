package confirm

import (
	"encoding/json"
	"testing"
)

// TestReview23ArgsSHA256RefusesReplacedText pins what ArgsSHA256's doc
// now says (it listed only invalid JSON, trailing data and duplicate
// members): text that is not valid UTF-8, or that escapes a lone
// surrogate, is refused, since decoding turns each into U+FFFD and
// different arguments would hash alike.
func TestReview23ArgsSHA256RefusesReplacedText(t *testing.T) {
	for _, args := range []string{
		"{\"note\":\"ok\xff\"}",
		`{"note":"ok\ud800"}`,
		`{"note":"ok\udc00x"}`,
		"{\"n\xc3\":1}",
	} {
		if sum, err := ArgsSHA256(json.RawMessage(args)); err == nil {
			t.Errorf("ArgsSHA256(%q) = %s, nil; want an error", args, sum)
		}
	}
	if _, err := ArgsSHA256(json.RawMessage(`{"note":"ok\ud83d\ude00\ufffd"}`)); err != nil {
		t.Errorf("ArgsSHA256 of a surrogate pair and a real U+FFFD: %v", err)
	}
}
