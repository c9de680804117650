package token_test

import (
	"crypto"
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mcpguard/mcpguard/policy"
	"github.com/mcpguard/mcpguard/token"
)

// TestReview34CheckPrincipalPrintableASCII pins the range CheckPrincipal
// accepts in a subject and a role: every printable ASCII byte, '~' (0x7e)
// the last of them, is accepted; DEL (0x7f), a control byte or a byte of a
// UTF-8 sequence is refused wherever it stands, the first byte included,
// since Go's HTTP client refuses such a header value and a downstream would
// never see the identity the gateway checked.
func TestReview34CheckPrincipalPrintableASCII(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pr         policy.Principal
		acceptable bool
	}{
		{"tilde_subject", policy.Principal{Subject: "~alice~", Roles: []string{"admin"}}, true},
		{"tilde_role", policy.Principal{Subject: "alice", Roles: []string{"~ops~"}}, true},
		{"all_printable_subject", policy.Principal{Subject: printable(' '+1, '~')}, true},
		{"del_subject_end", policy.Principal{Subject: "alice\x7f"}, false},
		{"del_subject_start", policy.Principal{Subject: "\x7falice"}, false},
		{"nul_subject_start", policy.Principal{Subject: "\x00alice"}, false},
		{"utf8_subject_start", policy.Principal{Subject: "élise"}, false},
		{"del_role", policy.Principal{Subject: "alice", Roles: []string{"admin\x7f"}}, false},
		{"del_role_start", policy.Principal{Subject: "alice", Roles: []string{"\x7fadmin"}}, false},
		{"control_role_start", policy.Principal{Subject: "alice", Roles: []string{"\x01admin"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := token.CheckPrincipal(&tc.pr)
			if tc.acceptable && err != nil {
				t.Fatalf("CheckPrincipal(%q, %q) = %v, want nil", tc.pr.Subject, tc.pr.Roles, err)
			}
			if !tc.acceptable && err == nil {
				t.Fatalf("CheckPrincipal(%q, %q) = nil, want an error", tc.pr.Subject, tc.pr.Roles)
			}
		})
	}
}

// printable returns the bytes from lo to hi, in order.
func printable(lo, hi byte) string {
	var b strings.Builder
	for c := lo; c <= hi; c++ {
		b.WriteByte(c)
	}
	return b.String()
}

// TestReview34ParseRefusesRolesNotAList: a token table entry whose "roles"
// is a string or an object (a list was meant) is refused, rather than read
// as a principal with no roles.
func TestReview34ParseRefusesRolesNotAList(t *testing.T) {
	for _, data := range []string{
		`{"tok":{"sub":"alice","roles":"admin"}}`,
		`{"tok":{"sub":"alice","roles":{"admin":true}}}`,
		`{"tok":{"sub":"alice","roles":5}}`,
	} {
		if tab, err := token.Parse([]byte(data)); err == nil {
			t.Errorf("Parse(%s) = %v with alice's roles %q, want an error", data, tab, tab.Lookup("tok").Roles)
		}
	}
}

// TestReview34BearerTokenAlphabet pins the b64token alphabet at its edges:
// every letter and digit, and each of -._~+/, is accepted in any place of
// a bearer token, '=' only at its end, and nothing else.
func TestReview34BearerTokenAlphabet(t *testing.T) {
	alphabet := printable('a', 'z') + printable('A', 'Z') + printable('0', '9') + "-._~+/"
	for i := 0; i < len(alphabet); i++ {
		c := alphabet[i : i+1]
		for _, tok := range []string{c, c + "x", "x" + c, c + "="} {
			h := http.Header{"Authorization": {"Bearer " + tok}}
			if got, ok := token.Bearer(h); !ok || got != tok {
				t.Errorf("Bearer(%q) = %q, %v; want it, true", tok, got, ok)
			}
		}
	}
	for c := 0; c < 256; c++ {
		if strings.IndexByte(alphabet, byte(c)) >= 0 {
			continue
		}
		for _, tok := range []string{string(rune(c)), "x" + string([]byte{byte(c)}), string([]byte{byte(c)}) + "x"} {
			if c == '=' && tok == "x=" {
				continue
			}
			if token.IsToken68(tok) {
				t.Errorf("IsToken68(%q) = true, want false", tok)
			}
		}
	}
}

// TestReview34JWTTimeClaimEdges: a time claim of 0 (1970) is in range:
// an "iat" or "nbf" of 0 is accepted, and so is an "exp" at the last second
// of the year 9999, the latest allowed.
func TestReview34JWTTimeClaimEdges(t *testing.T) {
	key := edKey(t)
	v := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": key.Public()}})
	for _, tc := range []struct {
		name string
		edit func(jwt.MapClaims)
	}{
		{"iat_zero", func(c jwt.MapClaims) { c["iat"] = 0 }},
		{"nbf_zero", func(c jwt.MapClaims) { c["nbf"] = 0 }},
		{"exp_year_9999", func(c jwt.MapClaims) { c["exp"] = int64(253402300799) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := v.Verify(sign(t, jwt.SigningMethodEdDSA, key, "ed", claims(tc.edit))); err != nil {
				t.Fatalf("Verify = %v, want nil", err)
			}
		})
	}
}
