package confirm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
)

// ArgsSHA256 returns the hex SHA-256 of the canonical form of a tool call's
// JSON arguments: objects with sorted keys, no insignificant whitespace,
// numbers kept exactly as written (so 12.5 and 12.50 differ), and strings
// re-encoded without HTML escaping. Empty arguments hash as null. It returns
// an error for invalid JSON or trailing data.
func ArgsSHA256(args json.RawMessage) (string, error) {
	c, err := canonical(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

func canonical(args json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return []byte("null"), nil
	}
	v, err := decode(args)
	if err != nil {
		return nil, err
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
