package mcpguard

import (
	"bytes"
	"encoding/json"

	"github.com/mcpguard/mcpguard/internal/foldkey"
)

// checkKeys refuses a JSON document in which some object has the same key
// twice or, when fold is set, two keys that are one name to a handler
// matching names loosely (foldkey.EqualName): that differ only in letter
// case (under Unicode simple folding: "seats", "SEATS" and "\u017feats"),
// which encoding/json matches to one struct field, or also in '_' and '-'
// ("amount", "a_mount", "-AMOUNT"), which encoding/json/v2's
// case-insensitive matching (MatchCaseInsensitiveNames, a `case:ignore`
// tag) matches to one. So two names a schema declares ("user_id" and
// "userid") may each come alone, not both. Without fold, keys are
// compared byte for byte once decoded. Validators and handlers disagree
// about which duplicate wins, so a duplicate is a way to smuggle a value
// past validation. It assumes raw is otherwise valid JSON (the decoder
// checks that) and does not allocate for documents with up to 32 keys per
// object and unescaped keys.
func checkKeys(raw []byte, fold bool) error {
	type frame struct {
		isObj bool
		start int               // index into keys of this object's first key
		set   map[string][]byte // this object's keys by folded form, once it has many
	}
	var frameBuf [16]frame
	var keyBuf [32][]byte
	frames := frameBuf[:0]
	keys := keyBuf[:0]
	expectKey := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{':
			frames = append(frames, frame{isObj: true, start: len(keys)})
			expectKey = true
		case '[':
			frames = append(frames, frame{isObj: false})
			expectKey = false
		case '}', ']':
			if n := len(frames); n > 0 {
				if frames[n-1].isObj {
					keys = keys[:frames[n-1].start]
				}
				frames = frames[:n-1]
			}
			expectKey = false
		case ',':
			expectKey = len(frames) > 0 && frames[len(frames)-1].isObj
		case '"':
			j := i + 1
			escaped := false // escapes or non-ASCII: compare the decoded key
			for j < len(raw) && raw[j] != '"' {
				if raw[j] == '\\' {
					escaped = true
					j++
				} else if raw[j] >= 0x80 {
					escaped = true // invalid UTF-8 decodes to U+FFFD
				}
				j++
			}
			if j >= len(raw) {
				return nil // malformed: the decoder reports it
			}
			if expectKey {
				k := raw[i+1 : j]
				if escaped {
					var s string
					if err := json.Unmarshal(raw[i:j+1], &s); err != nil {
						return nil
					}
					k = []byte(s)
				}
				f := &frames[len(frames)-1]
				if f.set == nil && len(keys)-f.start >= manyKeys {
					// Past a few keys, a set: comparing each key with all
					// before it would be quadratic (seconds for a large
					// object, before any schema could refuse it).
					f.set = make(map[string][]byte, 2*manyKeys)
					for _, prev := range keys[f.start:] {
						f.set[setKey(prev, fold)] = prev
					}
				}
				if f.set != nil {
					sk := setKey(k, fold)
					if prev, dup := f.set[sk]; dup {
						return duplicateKey(prev, k)
					}
					f.set[sk] = k
				} else {
					for _, prev := range keys[f.start:] {
						if fold && foldkey.EqualName(prev, k) || !fold && bytes.Equal(prev, k) {
							return duplicateKey(prev, k)
						}
					}
				}
				keys = append(keys, k)
				expectKey = false
			}
			i = j
		}
	}
	return nil
}

// setKey is the form of key k that checkKeys's set compares.
func setKey(k []byte, fold bool) string {
	if fold {
		return string(foldkey.AppendName(nil, k))
	}
	return string(k)
}

// manyKeys is the number of keys of one object past which checkKeys keeps
// them in a set.
const manyKeys = 16

// duplicateKey is the refusal of key k, which repeats prev (maybe in
// another letter case or with other '_' and '-': the fast path cannot say
// which, so neither says).
// The key is quoted as the fast path quotes names (quoteName: cut, and
// what does not print escaped); unlike the fast path's, the message names
// the key alone, not its path.
func duplicateKey(prev, k []byte) error {
	return invalidArgs("argument "+quoteName(string(k))+" appears twice", "")
}
