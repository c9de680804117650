package confirm_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/confirm"
)

// review63gKeyForms returns the ways fmt, slog and encoding/json write the
// bytes of key: as text, in hex, as decimal and Go-syntax lists, in base64.
func review63gKeyForms(key []byte) []string {
	dec := fmt.Sprint(key)
	gosyn := fmt.Sprintf("%#v", key)
	b64, _ := json.Marshal(key)
	return []string{
		string(key),
		hex.EncodeToString(key),
		dec[1 : len(dec)-1],
		gosyn[strings.IndexByte(gosyn, '{')+1 : len(gosyn)-1],
		strings.Trim(string(b64), `"`),
	}
}

// TestReview63gSignerNeverPrintsItsKeys: a *confirm.Signer holds the
// HMAC secrets that make confirmation states unforgeable. Printed with fmt
// (%v, %+v, %#v, %s, %d), logged as a slog attribute (slog's text handler
// prints an attribute with %+v), or held in an unexported field of a
// struct that is printed, it must not show them: the token package's
// holders of secrets (Table, Introspector, RemoteKeySet) and the root
// package's Credential print redacted for every verb, and a Signer is
// the kind of value an operator logs while wiring a server ("confirm",
// signer). It printed its signing key and every verification key.
func TestReview63gSignerNeverPrintsItsKeys(t *testing.T) {
	secret := []byte("S3CRET-confirm-key-0123456789abcdef")
	old := bytes.Repeat([]byte{0xa7}, confirm.MinSecretLen)
	s, err := confirm.NewSigner([]confirm.Key{{ID: "k1", Secret: secret}, {ID: "k0", Secret: old}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type holder struct{ signer *confirm.Signer }
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		outs = append(outs, verb+": "+fmt.Sprintf(verb, s))
		outs = append(outs, verb+" (unexported field): "+fmt.Sprintf(verb, holder{s}))
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("wiring", "confirm", s)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("wiring", "confirm", s)
	outs = append(outs, "slog text: "+text.String(), "slog json: "+js.String())
	for _, out := range outs {
	next:
		for _, key := range [][]byte{secret, old} {
			for _, form := range review63gKeyForms(key) {
				if strings.Contains(out, form) {
					t.Errorf("a secret of the Signer is shown (as %.20q...) in %.200s", form, out)
					break next
				}
			}
		}
	}
}
