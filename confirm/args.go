package confirm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"

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
// as encoding/json matches struct fields): parsers disagree on which
// occurrence wins, so the canonical form would bind the hash to arguments
// a downstream may read otherwise.
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, errors.New("confirm: arguments cannot be encoded")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
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
