package token_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview63gGatewaySignerNeverPrintsItsKeys: a *token.GatewaySigner
// holds the keys with which the gateway signs, and a downstream verifies,
// the identity headers: whoever has one can send any identity. Its String
// describes it without its keys, but it printed them for every verb String
// is not called for: %#v (fmt calls GoString there), %d, and %s or %q of
// a struct holding it in an unexported field (fmt then walks its fields),
// where the package's other holders of secrets (Table, Introspector,
// RemoteKeySet) print their String for every verb and hide their secrets
// from such a walk.
func TestReview63gGatewaySignerNeverPrintsItsKeys(t *testing.T) {
	key := []byte("S3CRET-gateway-sign-key-0123456789abcdef")
	old := bytes.Repeat([]byte{0xb5}, token.MinGatewayKeyLen)
	s, err := token.NewGatewaySigner(key, old)
	if err != nil {
		t.Fatal(err)
	}
	type holder struct{ signer *token.GatewaySigner }
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		outs = append(outs, verb+": "+fmt.Sprintf(verb, s))
		outs = append(outs, verb+" (unexported field): "+fmt.Sprintf(verb, holder{s}))
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("wiring", "signer", s)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("wiring", "signer", s)
	outs = append(outs, "slog text: "+text.String(), "slog json: "+js.String())
	for _, out := range outs {
	next:
		for _, k := range [][]byte{key, old} {
			dec, gosyn := fmt.Sprint(k), fmt.Sprintf("%#v", k)
			b64, _ := json.Marshal(k)
			for _, form := range []string{
				string(k), hex.EncodeToString(k), dec[1 : len(dec)-1],
				gosyn[strings.IndexByte(gosyn, '{')+1 : len(gosyn)-1], strings.Trim(string(b64), `"`),
			} {
				if strings.Contains(out, form) {
					t.Errorf("a key of the GatewaySigner is shown (as %.20q...) in %.200s", form, out)
					break next
				}
			}
		}
	}
}
