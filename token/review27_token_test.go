package token_test

import (
	"crypto"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpguard/mcpguard/token"
)

// TestReview27JWTMissingClaimReason: the jwt parser reads an "exp" of 0
// as no "exp" at all, and a missing claim is reported by name. The reason
// named the audience for a token whose "aud" was right and whose "exp" was
// 0, and the issuer for one whose "iss" was there (a number) and whose
// "aud" was missing: the operator was sent to look at the wrong claim.
func TestReview27JWTMissingClaimReason(t *testing.T) {
	key := edKey(t)
	v := newJWT(t, token.JWTConfig{Keys: map[string]crypto.PublicKey{"ed": key.Public()}})
	exp := testNow.Unix() + 3600
	iss, aud := fmt.Sprintf(`"iss":%q`, testIssuer), fmt.Sprintf(`"aud":%q`, testAudience)
	for _, tc := range []struct {
		name, claims, want, not string
	}{
		{"exp_zero", `{` + iss + `,` + aud + `,"sub":"alice","exp":0}`, "exp", "aud claim"},
		{"exp_minus_zero", `{` + iss + `,` + aud + `,"sub":"alice","exp":-0}`, "exp", "aud claim"},
		{"exp_absent", `{` + iss + `,` + aud + `,"sub":"alice"}`, "exp", "aud claim"},
		{"iss_absent", fmt.Sprintf(`{%s,"sub":"alice","exp":%d}`, aud, exp), "iss", "aud claim"},
		{"iss_empty", fmt.Sprintf(`{"iss":"",%s,"sub":"alice","exp":%d}`, aud, exp), "iss", "aud claim"},
		{"iss_number_aud_absent", fmt.Sprintf(`{"iss":5,"sub":"alice","exp":%d}`, exp), "aud", "iss claim"},
		{"aud_absent", fmt.Sprintf(`{%s,"sub":"alice","exp":%d}`, iss, exp), "aud", "iss claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := rawEdToken(key, `{"alg":"EdDSA","kid":"ed"}`, tc.claims)
			_, _, err := v.Verify(tok)
			checkRefusal(t, err, tok, tc.want)
			if err != nil && strings.Contains(err.Error(), tc.not) {
				t.Errorf("Verify(%s) = %q, names %q, which is not what is missing", tc.claims, err, tc.not)
			}
		})
	}
}
