package token

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

// TestParseDuplicateToken: a token table that lists the same token twice
// with different principals is ambiguous (encoding/json would keep the
// last): it is refused, as duplicate keys in tool arguments are.
func TestParseDuplicateToken(t *testing.T) {
	tab, err := Parse([]byte(`{"tok-shared":{"sub":"viewer-bot","role":"viewer"},"tok-shared":{"sub":"root","role":"admin"}}`))
	if err == nil {
		pr := tab.Lookup("tok-shared")
		t.Errorf("Parse of a table with token listed twice succeeded (it resolves to %q %v), want an error", pr.Subject, pr.Roles)
	}
}

// TestTableFormatHidesDigests: printing a Table (a debug %+v of a config
// struct, a panic value) shows no digest of a token: for the tokens people
// configure ("demo-token-alice") an unsalted SHA-256 lets a guess be
// checked offline.
func TestTableFormatHidesDigests(t *testing.T) {
	const tok = "demo-token-alice"
	tab, err := Parse([]byte(`{"` + tok + `":{"sub":"alice","role":"support"}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256([]byte(tok))
	dec := strings.Trim(fmt.Sprint(d[:8]), "[]") // how fmt prints the start of a byte array
	for _, verb := range []string{"%v", "%+v", "%#v", "%x"} {
		s := fmt.Sprintf(verb, tab)
		if strings.Contains(s, dec) || strings.Contains(s, fmt.Sprintf("%x", d[:8])) || strings.Contains(s, fmt.Sprintf("%#x", d[0])) {
			t.Errorf("fmt %s of a Table shows the SHA-256 of its token: %.200s", verb, s)
		}
	}
}
