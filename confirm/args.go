package confirm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/mcpguard/mcpguard/internal/foldkey"
	"github.com/mcpguard/mcpguard/internal/jsondup"
	"github.com/mcpguard/mcpguard/internal/textsafe"
)

// ArgsSHA256 returns the hex SHA-256 of the canonical form of a tool call's
// JSON arguments: objects with sorted keys, no insignificant whitespace,
// numbers kept exactly as written (so 12.5 and 12.50 differ), and strings
// re-encoded without HTML escaping. Empty arguments (nothing, or JSON
// whitespace only) hash as null. It returns an error for invalid JSON,
// trailing data, text that is not valid UTF-8 or escapes a lone UTF-16
// surrogate (decoding makes either U+FFFD, so arguments a downstream reads
// apart would hash alike), or an object that names a member twice, or two
// members whose names differ only in letter case (Unicode simple folding,
// as encoding/json matches struct fields), '_' or '-' ("amount" and
// "a_mount", as encoding/json/v2's case-insensitive matching reads them):
// parsers disagree on which occurrence wins, so the canonical form would
// bind the hash to arguments a downstream may read otherwise.
func ArgsSHA256(args json.RawMessage) (string, error) {
	c, err := canonical(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

func canonical(args json.RawMessage) ([]byte, error) {
	// JSON whitespace only: bytes.TrimSpace would also take a vertical
	// tab or a no-break space, no JSON at all, for empty arguments.
	if len(bytes.Trim(args, " \t\r\n")) == 0 {
		return []byte("null"), nil
	}
	v, err := decode(args)
	if err != nil {
		return nil, err
	}
	// Decoding turns invalid UTF-8 and lone surrogates into U+FFFD, so
	// different arguments would hash alike; a downstream that keeps them
	// (one in JavaScript, say) would run what the human did not approve.
	if textsafe.JSONReplaced(args) {
		return nil, errors.New("confirm: arguments hold invalid UTF-8 or a lone UTF-16 surrogate")
	}
	// Names are compared under case folding: encoding/json matches
	// "amount" and "Amount" to one struct field, the last
	// one winning, and the canonical form, which keeps both, would hash
	// {"amount":1,"Amount":1000} and its reverse, read otherwise, alike.
	if _, _, dup := jsondup.Member(args, func(int) bool { return true }); dup {
		return nil, errors.New("confirm: arguments name an object member twice (or two that differ only in letter case)")
	}
	// encoding/json/v2's case-insensitive matching (MatchCaseInsensitiveNames,
	// a `case:ignore` tag) leaves '_' and '-' out too: a handler using it
	// reads {"amount":5,"a_mount":1e9} as one field, the last one winning.
	if looseTwins(v) {
		return nil, errors.New("confirm: arguments name two object members that differ only in letter case, '_' or '-'")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, errors.New("confirm: arguments cannot be encoded")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// looseTwins reports whether an object in v, decoded JSON, has two member
// names that fold alike under foldkey.AppendName. Only an object with a
// name holding '_' or '-' can: names without them fold as under
// foldkey.Append, and jsondup.Member has refused those twins already.
func looseTwins(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if strings.ContainsAny(k, "_-") {
				seen := make(map[string]bool, len(x))
				var buf []byte
				for name := range x {
					buf = foldkey.AppendName(buf[:0], []byte(name))
					if seen[string(buf)] {
						return true
					}
					seen[string(buf)] = true
				}
				break
			}
		}
		for _, e := range x {
			if looseTwins(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if looseTwins(e) {
				return true
			}
		}
	}
	return false
}

// decode parses exactly one JSON value, keeping numbers as written.
func decode(args json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, errors.New("confirm: arguments are not valid JSON")
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("confirm: arguments have trailing data")
	}
	return v, nil
}
