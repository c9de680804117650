package confirm

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestReview25StateShowsSubjectAndKeyID: the package doc said the state
// "reveals nothing the client did not send". It carries, readable without
// any key, the subject the server authenticated the caller as (which a
// bearer token or a gateway maps on the server: an e-mail, an internal
// id) and the signing key's id, neither of which the client sent. The doc
// now says so; this test pins what a client can read, so that the doc is
// revisited if the format changes.
func TestReview25StateShowsSubjectAndKeyID(t *testing.T) {
	s := newSigner(t, []Key{{ID: "prod-2026-07", Secret: secretA}}, nil)
	c := Claims{Subject: "alice@corp.example", Tool: "refund", ArgsSHA256: strings.Repeat("ab", 32)}
	st := issue(t, s, t0, c)
	p, _, _ := strings.Cut(st, ".")
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{c.Subject, "prod-2026-07", c.Tool, c.ArgsSHA256} {
		if !strings.Contains(string(raw), v) {
			t.Errorf("the state's payload does not hold %q in clear", v)
		}
	}
}
