package token

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math"
	"math/big"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// The fuzz targets of review 61a: no panic on any input, and no token
// accepted that the documented checks, written out again here
// independently of the package's code, would refuse.

const (
	f61Issuer   = "https://issuer.example.com"
	f61Audience = "https://mcp.example.com"
)

var f61Now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// f61Keys are the issuer's private keys, made once per process.
type f61Keys struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
	ed  ed25519.PrivateKey
}

var f61KeysOnce = sync.OnceValue(func() *f61Keys {
	k := &f61Keys{}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	return k
})

// f61Signer is one way the issuer signs: a kid, a method and a key.
type f61Signer struct {
	kid    string
	method jwt.SigningMethod
	priv   crypto.Signer
}

func f61Signers() []f61Signer {
	k := f61KeysOnce()
	registerEd25519()
	return []f61Signer{
		{"rsa", jwt.SigningMethodRS256, k.rsa},
		{"rsa", jwt.SigningMethodPS256, k.rsa},
		{"ec", jwt.SigningMethodES256, k.ec},
		{"ed", jwt.SigningMethodEdDSA, k.ed},
		{"ed", jwt.GetSigningMethod(algEd25519), k.ed},
	}
}

func f61Public() map[string]crypto.PublicKey {
	k := f61KeysOnce()
	return map[string]crypto.PublicKey{"rsa": &k.rsa.PublicKey, "ec": &k.ec.PublicKey, "ed": k.ed.Public()}
}

func f61JWT(tb testing.TB, keys map[string]crypto.PublicKey, set *RemoteKeySet) *JWT {
	tb.Helper()
	v, err := NewJWT(JWTConfig{
		Keys: keys, KeySet: set, Issuer: f61Issuer, Audience: f61Audience,
		AttrClaims: map[string]string{"tenant": "org.tid"},
		Now:        func() time.Time { return f61Now },
	})
	if err != nil {
		tb.Fatalf("NewJWT: %v", err)
	}
	return v
}

var b64u = base64.RawURLEncoding

// f61SignRaw signs header and claims exactly as given (no re-encoding).
func f61SignRaw(tb testing.TB, s f61Signer, header, claims []byte) string {
	tb.Helper()
	input := b64u.EncodeToString(header) + "." + b64u.EncodeToString(claims)
	var key any = s.priv
	sig, err := s.method.Sign(input, key)
	if err != nil {
		tb.Fatalf("sign: %v", err)
	}
	return input + "." + b64u.EncodeToString(sig)
}

func f61Header(s f61Signer, kid bool) []byte {
	h := map[string]any{"alg": s.method.Alg(), "typ": "JWT"}
	if kid {
		h["kid"] = s.kid
	}
	b, _ := json.Marshal(h)
	return b
}

func f61Claims() []byte {
	return []byte(`{"iss":"` + f61Issuer + `","aud":["` + f61Audience + `","other"],"sub":"alice",` +
		`"iat":1772366400,"nbf":1772366000,"exp":1772370000,"roles":"support admin",` +
		`"org":{"tid":"acme"}}`)
}

// f61Valid returns valid tokens, one per signer.
func f61Valid(tb testing.TB) []string {
	var toks []string
	for _, s := range f61Signers() {
		toks = append(toks, f61SignRaw(tb, s, f61Header(s, true), f61Claims()))
	}
	return toks
}

// FuzzF61Bearer: Bearer never panics, and what it returns is a token68
// that the header value ends with, after a "Bearer" scheme.
func FuzzF61Bearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer   a.b.c", "Bearer a==", "Bearer =", "Basic x", "Bearer a b", "Bearer\ta", "BEARER x~+/=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		tok, ok := Bearer(http.Header{"Authorization": {value}})
		if !ok {
			return
		}
		if !IsToken68(tok) || !strings.HasSuffix(value, " "+tok) || !strings.EqualFold(value[:7], "Bearer ") {
			t.Fatalf("Bearer(%q) = %q", value, tok)
		}
		if strings.TrimLeft(value[7:], " ") != tok {
			t.Fatalf("Bearer(%q) = %q, not the rest of the value", value, tok)
		}
	})
}

// FuzzF61ParseTable: Parse never panics, and a table it returns holds
// principals that pass CheckPrincipal, one per token of the document.
func FuzzF61ParseTable(f *testing.F) {
	for _, s := range []string{
		`{"tok-1":"admin"}`,
		`{"tok-2":["support","billing"],"tok-3":{"sub":"svc","role":"admin"}}`,
		`{"tok-4":{"sub":"ann","roles":["a","b"]}}`,
		`{"t":{"sub":"a","SUB":"b"}}`, `{"t":{"ſub":"a"}}`, `{"a":"x","a":"y"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse(data)
		if err != nil {
			return
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatalf("Parse accepted what encoding/json refuses: %v", err)
		}
		if tab.Len() != len(raw) {
			t.Fatalf("Len %d, %d tokens", tab.Len(), len(raw))
		}
		subs := map[string]bool{}
		for tok := range raw {
			pr := tab.Lookup(tok)
			if pr == nil {
				t.Fatalf("token %q not found", tok)
			}
			if err := CheckPrincipal(pr); err != nil || pr.Subject == "" {
				t.Fatalf("principal %+v: %v", pr, err)
			}
			subs[pr.Subject] = true
		}
		if tab.Lookup("") != nil {
			t.Fatal("the empty token is found")
		}
	})
}

// FuzzF61JWTString: starting from valid tokens, no other string is
// accepted (no mutation of the header, claims or signature, nor another
// spelling of them), and the valid ones give alice.
func FuzzF61JWTString(f *testing.F) {
	valid := f61Valid(f)
	for _, tok := range valid {
		f.Add(tok)
	}
	v := f61JWT(f, f61Public(), nil)
	for _, tok := range valid {
		if _, _, err := v.Verify(tok); err != nil {
			f.Fatalf("a valid token is refused: %v", err)
		}
	}
	f.Fuzz(func(t *testing.T, tok string) {
		pr, exp, err := v.Verify(tok)
		if err != nil {
			if !isInvalid(err) {
				t.Fatalf("refusal that is not ErrInvalidJWT: %v", err)
			}
			if strings.Contains(err.Error(), tok) && len(tok) > 8 {
				t.Fatalf("error quotes the token: %v", err)
			}
			return
		}
		if !slices.Contains(valid, tok) {
			t.Fatalf("accepted a mutated token %q (principal %+v)", tok, pr)
		}
		if pr.Subject != "alice" || !slices.Equal(pr.Roles, []string{"support", "admin"}) ||
			pr.Attrs["tenant"] != "acme" || exp.Unix() != 1772370000 {
			t.Fatalf("principal %+v, exp %v", pr, exp)
		}
	})
}

func isInvalid(err error) bool {
	var je *jwtError
	return errors.As(err, &je)
}

// FuzzF61JWTSigned: the issuer signs a header and claims set the fuzzer
// writes (parser differentials, duplicates, escapes, odd time claims,
// alg and kid tricks); a token accepted must pass the documented checks,
// as f61Oracle reads them, and give the principal it reads.
func FuzzF61JWTSigned(f *testing.F) {
	signers := f61Signers()
	for i, s := range signers {
		f.Add(uint8(i), f61Header(s, true), f61Claims())
	}
	s0 := signers[0]
	for _, h := range []string{
		`{"alg":"RS256","kid":"rsa","kid":"ec"}`, `{"alg":"RS256","kid":"rsa","crit":["x"]}`,
		`{"alg":"RS256","kid":"rsa","typ":"dpop+jwt"}`, `{"alg":"RS256","kid":"rsa","typ":"APPLICATION/AT+JWT"}`,
		`{"alg":"none","kid":"rsa"}`, `{"alg":"HS256","kid":"rsa"}`, `{"alg":"RS256","KID":"rsa","kid":"rsa"}`,
		`{"alg":"RS256","kid":"rsa","Alg":"none"}`, `{"alg":"RS256"}`, `{"alg":"RS256","kid":null}`,
	} {
		f.Add(uint8(0), []byte(h), f61Claims())
	}
	for _, c := range []string{
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":1772370000.5}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":1772370000,"SUB":"bob"}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":1772370000,"s\u0075b":"bob"}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":9e18,"nbf":-1}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":"1772370000"}`,
		`{"iss":"` + f61Issuer + `","aud":["x","` + f61Audience + `"],"sub":"alice","exp":1772370000,"iat":0}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":1772370000,"org":{"tid":"a","TID":"b"}}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":1772370000,"roles":["a","a b"]}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":1772370000,"cnf":null}`,
		`{"iss":"` + f61Issuer + `","aud":"` + f61Audience + `","sub":"alice","exp":1772370000,"org.tid":"x"}`,
	} {
		f.Add(uint8(0), f61Header(s0, true), []byte(c))
	}
	v := f61JWT(f, f61Public(), nil)
	f.Fuzz(func(t *testing.T, which uint8, header, claims []byte) {
		s := signers[int(which)%len(signers)]
		tok := f61SignRaw(t, s, header, claims)
		pr, exp, err := v.Verify(tok)
		if err != nil {
			if !isInvalid(err) {
				t.Fatalf("refusal that is not ErrInvalidJWT: %v", err)
			}
			return
		}
		want, wantExp, why := f61Oracle(s, header, claims)
		if why != "" {
			t.Fatalf("accepted a token the documented checks refuse: %s\nheader %q\nclaims %q", why, header, claims)
		}
		if pr.Subject != want.sub || !slices.Equal(pr.Roles, want.roles) || pr.Attrs["tenant"] != want.tenant ||
			exp.Unix() != wantExp {
			t.Fatalf("principal %+v exp %d, want %+v exp %d\nheader %q\nclaims %q", pr, exp.Unix(), want, wantExp, header, claims)
		}
	})
}

type f61Principal struct {
	sub    string
	roles  []string
	tenant string
}

// f61Oracle reads header and claims as the JWT doc says a token is
// checked, and says why it must be refused, or "".
func f61Oracle(s f61Signer, header, claims []byte) (f61Principal, int64, string) {
	var p f61Principal
	if !utf8.Valid(header) || !utf8.Valid(claims) {
		return p, 0, "not UTF-8"
	}
	if d := f61Dup(header, false); d != "" {
		return p, 0, "header names " + d + " twice"
	}
	if d := f61Dup(claims, true); d != "" {
		return p, 0, "claims name " + d + " twice"
	}
	var h, c map[string]any
	if json.Unmarshal(header, &h) != nil || json.Unmarshal(claims, &c) != nil || h == nil || c == nil {
		return p, 0, "not JSON objects"
	}
	alg, _ := h["alg"].(string)
	if alg != s.method.Alg() && !(s.kid == "ed" && (alg == "EdDSA" || alg == algEd25519)) {
		return p, 0, "alg " + alg + " is not the signer's " + s.method.Alg()
	}
	if kid, ok := h["kid"]; !ok || kid != s.kid {
		return p, 0, "kid is not the signer's"
	}
	if _, ok := h["crit"]; ok {
		return p, 0, "crit"
	}
	if typ, ok := h["typ"]; ok {
		ts, _ := typ.(string)
		ts = strings.TrimPrefix(strings.ToLower(ts), "application/")
		if ts != "jwt" && ts != "at+jwt" {
			return p, 0, "typ"
		}
	}
	now := float64(f61Now.Unix())
	num := func(name string, required bool) (float64, string) {
		x, ok := c[name]
		if !ok {
			if required {
				return 0, name + " missing"
			}
			return math.NaN(), ""
		}
		f, isNum := x.(float64)
		if !isNum || f < 0 || f > 253402300799 {
			return 0, name + " not a number of seconds to 9999"
		}
		return f, ""
	}
	exp, why := num("exp", true)
	if why != "" {
		return p, 0, why
	}
	if math.Floor(exp) <= now {
		return p, 0, "expired"
	}
	for _, name := range []string{"nbf", "iat"} {
		x, why := num(name, false)
		if why != "" {
			return p, 0, why
		}
		if math.Floor(x) > now {
			return p, 0, name + " in the future"
		}
	}
	if iss, _ := c["iss"].(string); iss != f61Issuer {
		return p, 0, "iss"
	}
	switch aud := c["aud"].(type) {
	case string:
		if aud != f61Audience {
			return p, 0, "aud"
		}
	case []any:
		found := false
		for _, a := range aud {
			as, ok := a.(string)
			if !ok {
				return p, 0, "aud holds a non-string"
			}
			found = found || as == f61Audience
		}
		if !found {
			return p, 0, "aud"
		}
	default:
		return p, 0, "aud"
	}
	if _, ok := c["cnf"]; ok {
		return p, 0, "cnf"
	}
	sub, ok := c["sub"].(string)
	if !ok || sub == "" || strings.TrimSpace(sub) != sub || !f61Printable(sub) {
		return p, 0, "sub"
	}
	p.sub = sub
	switch r := c["roles"].(type) {
	case nil:
		if _, present := c["roles"]; present {
			return p, 0, "roles null"
		}
	case string:
		p.roles = strings.Fields(r)
		if strings.Join(strings.Split(r, " "), " ") != r || strings.ContainsAny(r, "\t\n\r\v\f") {
			// strings.Fields splits at other spaces too; those are not
			// printable, so CheckPrincipal refuses them.
			return p, 0, "roles with control characters"
		}
	case []any:
		p.roles = []string{}
		for _, x := range r {
			rs, ok := x.(string)
			if !ok {
				return p, 0, "roles holds a non-string"
			}
			p.roles = append(p.roles, rs)
		}
	default:
		return p, 0, "roles of another type"
	}
	for _, r := range p.roles {
		if r == "" || !f61Printable(r) || strings.ContainsAny(r, ", ") {
			return p, 0, "role not header-safe"
		}
	}
	if len(p.roles) == 0 {
		p.roles = nil
	}
	if tid, present := c["org.tid"]; present {
		ts, ok := tid.(string)
		if !ok {
			return p, 0, "org.tid not a string"
		}
		p.tenant = ts
	} else if org, present := c["org"]; present {
		o, ok := org.(map[string]any)
		if !ok {
			return p, 0, "org not an object"
		}
		for k := range o {
			if k != "tid" && strings.EqualFold(k, "tid") {
				return p, 0, "org names tid twice under folding"
			}
		}
		if tid, present := o["tid"]; present {
			ts, ok := tid.(string)
			if !ok {
				return p, 0, "org.tid not a string"
			}
			p.tenant = ts
		}
	}
	return p, int64(math.Floor(exp)), ""
}

func f61Printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// f61Dup returns a member name some object of data names twice
// (exactly, or under strings.EqualFold at the top level when fold).
func f61Dup(data []byte, fold bool) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	type obj struct {
		names []string
		key   bool
	}
	var stack []*obj
	for {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t {
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1] != nil {
				stack[len(stack)-1].key = true
			}
			continue
		}
		if top != nil && top.key {
			name := t.(string)
			for _, n := range top.names {
				if n == name || fold && len(stack) == 1 && strings.EqualFold(n, name) {
					return name
				}
			}
			top.names = append(top.names, name)
			top.key = false
			continue
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &obj{key: true})
		case json.Delim('['):
			stack = append(stack, nil)
		default:
			if top != nil {
				top.key = true
			}
		}
	}
}

// f61JWK returns the public JWK members of a signer's key.
func f61JWK(kid string) map[string]any {
	k := f61KeysOnce()
	switch kid {
	case "rsa":
		return map[string]any{"kty": "RSA", "kid": kid, "n": b64u.EncodeToString(k.rsa.N.Bytes()),
			"e": b64u.EncodeToString(big.NewInt(int64(k.rsa.E)).Bytes())}
	case "ec":
		b, _ := k.ec.PublicKey.Bytes()
		return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256",
			"x": b64u.EncodeToString(b[1:33]), "y": b64u.EncodeToString(b[33:])}
	}
	return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64u.EncodeToString(k.ed.Public().(ed25519.PublicKey))}
}

// FuzzF61JWKS: ParseJWKS and a RemoteKeySet's lenient reading never
// panic, every key they return is one NewJWT accepts, and a token
// signed with one of the test's keys verifies only when the document
// publishes that key for signatures, once, under the token's kid (or,
// from a remote set, for a token without a kid, at all), with an alg
// that is absent or the token's.
func FuzzF61JWKS(f *testing.F) {
	doc := func(keys ...map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"keys": keys})
		return b
	}
	with := func(kid string, kv ...any) map[string]any {
		m := f61JWK(kid)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	f.Add(doc(f61JWK("rsa"), f61JWK("ec"), f61JWK("ed")))
	f.Add(doc(with("rsa", "alg", "RS256"), with("ec", "use", "enc"), with("ed", "key_ops", []string{"sign"})))
	f.Add(doc(f61JWK("rsa"), with("rsa", "kid", "rsa"), with("ec", "kty", "OKP")))
	f.Add(doc(with("ec", "crv", "P-384"), with("ed", "d", "AAAA"), with("rsa", "n", "AQAB")))
	f.Add(doc(with("rsa", "USE", "enc"), with("ec", "kid", "rsa")))
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"rsa","use":"enc","use":"sig","n":"x","e":"AQAB"}]}`))
	toks := f61SignedTokens(f)
	if keys, err := ParseJWKS(doc(f61JWK("rsa"), f61JWK("ec"), f61JWK("ed"))); err != nil {
		f.Fatal(err)
	} else if v := f61JWT(f, keys, nil); true {
		for _, st := range toks {
			if _, _, err := v.Verify(st.token); (err == nil) != st.kid {
				f.Fatalf("%s (kid %v): %v", st.s.method.Alg(), st.kid, err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { f61CheckJWKS(t, data, toks) })
}

// f61Signed is a token signed by one of the test's signers, with or
// without a kid.
type f61Signed struct {
	s     f61Signer
	kid   bool
	token string
}

func f61SignedTokens(tb testing.TB) []f61Signed {
	var toks []f61Signed
	for _, s := range f61Signers() {
		for _, kid := range []bool{true, false} {
			toks = append(toks, f61Signed{s, kid, f61SignRaw(tb, s, f61Header(s, kid), f61Claims())})
		}
	}
	return toks
}

// FuzzF61JWKSBuilt builds JWK Sets from the test's keys with odd
// members (each 4 bytes of ops make one JWK: which key, kid, use,
// key_ops, alg, a wrong kty or crv, a short modulus, a private member),
// and checks them as FuzzF61JWKS does.
func FuzzF61JWKSBuilt(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 1, 0, 0, 2, 2, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0})
	f.Add([]byte{1, 0, 2, 3, 2, 3, 4, 5, 0, 4, 5, 6})
	toks := f61SignedTokens(f)
	kids := []string{"rsa", "ec", "ed", "RSA", "", "x"}
	uses := []any{nil, "sig", "enc", "SIG", 1, ""}
	ops := []any{nil, []string{"verify"}, []string{"sign"}, []string{}, "verify", []any{"verify", 1}}
	algs := []any{nil, "RS256", "PS256", "ES256", "EdDSA", "Ed25519", "HS256", "none", "ES384", 5}
	f.Fuzz(func(t *testing.T, opsb []byte) {
		var list []map[string]any
		for i := 0; i+3 < len(opsb) && len(list) < 8; i += 4 {
			a, b, c, d := opsb[i], opsb[i+1], opsb[i+2], opsb[i+3]
			m := f61JWK([]string{"rsa", "ec", "ed"}[int(a)%3])
			m["kid"] = kids[int(b)%len(kids)]
			if u := uses[int(c)%len(uses)]; u != nil {
				m["use"] = u
			}
			if o := ops[int(c/8)%len(ops)]; o != nil {
				m["key_ops"] = o
			}
			if al := algs[int(d)%len(algs)]; al != nil {
				m["alg"] = al
			}
			switch (d / 16) % 8 {
			case 1:
				m["kty"] = map[string]string{"RSA": "EC", "EC": "OKP", "OKP": "RSA"}[m["kty"].(string)]
			case 2:
				m["crv"] = "P-384"
			case 3:
				if n, ok := m["n"].(string); ok {
					m["n"] = n[:len(n)/2]
				}
			case 4:
				m["d"] = "AAAA"
			case 5:
				delete(m, "kid")
			case 6:
				m["kid"] = 7
			}
			list = append(list, m)
		}
		data, err := json.Marshal(map[string]any{"keys": list})
		if err != nil {
			t.Fatal(err)
		}
		f61CheckJWKS(t, data, toks)
	})
}

// f61CheckJWKS checks a JWK Set document against tokens of the test's
// keys, read by ParseJWKS, leniently, and by a RemoteKeySet.
func f61CheckJWKS(t *testing.T, data []byte, toks []f61Signed) {
	strict, serr := ParseJWKS(data)
	lenient, _, lerr := parseJWKS(data, true)
	if serr == nil && (lerr != nil || len(lenient) != len(strict)) {
		t.Fatalf("the lenient reading differs from a strict one that succeeds: %v", lerr)
	}
	for name, keys := range map[string]map[string]crypto.PublicKey{"strict": strict, "lenient": lenient} {
		if len(keys) == 0 {
			continue
		}
		v, err := NewJWT(JWTConfig{Keys: keys, Issuer: f61Issuer, Audience: f61Audience, Now: func() time.Time { return f61Now }})
		if err != nil {
			t.Fatalf("%s: NewJWT refuses a parsed set: %v", name, err)
		}
		for _, st := range toks {
			if _, _, err := v.Verify(st.token); err == nil {
				if !st.kid && len(keys) != 1 {
					t.Fatalf("%s: a token without a kid accepted with %d keys", name, len(keys))
				}
				if why := f61JWKSOracle(data, st.s, st.kid, false); why != "" {
					t.Fatalf("%s: %s token (kid %v) accepted: %s\n%s", name, st.s.method.Alg(), st.kid, why, data)
				}
			}
		}
	}
	if lerr != nil {
		return
	}
	set, err := NewRemoteKeySet(context.Background(), "http://127.0.0.1/jwks", &RemoteKeySetOptions{
		Client:       &http.Client{Transport: f61Doc(data)},
		ErrorHandler: func(error) {},
	})
	if err != nil {
		t.Fatalf("NewRemoteKeySet over a set parseJWKS reads: %v", err)
	}
	v := f61JWT(t, nil, set)
	for _, st := range toks {
		if _, _, err := v.Verify(st.token); err == nil {
			if why := f61JWKSOracle(data, st.s, st.kid, true); why != "" {
				t.Fatalf("remote: %s token (kid %v) accepted: %s\n%s", st.s.method.Alg(), st.kid, why, data)
			}
		}
	}
}

// f61Doc is a transport that answers every request with a document.
type f61Doc []byte

func (d f61Doc) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(d)), Request: r}, nil
}

// f61JWKSOracle says why data must not let a token of s verify, or "".
func f61JWKSOracle(data []byte, s f61Signer, hasKid, remote bool) string {
	var set map[string]json.RawMessage
	var list []map[string]json.RawMessage
	if json.Unmarshal(data, &set) != nil || json.Unmarshal(set["keys"], &list) != nil {
		// A list with an entry that is not an object: read the objects.
		var raws []json.RawMessage
		if json.Unmarshal(set["keys"], &raws) != nil {
			return "no keys list"
		}
		for _, r := range raws {
			var m map[string]json.RawMessage
			if json.Unmarshal(r, &m) == nil && m != nil {
				list = append(list, m)
			}
		}
	}
	str := func(m map[string]json.RawMessage, name string) (string, bool) {
		var s string
		raw, ok := m[name]
		return s, ok && json.Unmarshal(raw, &s) == nil
	}
	want := f61JWK(s.kid)
	matches, sameKid := 0, 0
	for _, m := range list {
		kid, _ := str(m, "kid")
		signing := true
		if _, ok := m["use"]; ok {
			u, _ := str(m, "use")
			signing = u == "sig"
		}
		if raw, ok := m["key_ops"]; ok {
			var ops []string
			signing = signing && json.Unmarshal(raw, &ops) == nil && slices.Contains(ops, "verify")
		}
		if !signing {
			continue
		}
		if hasKid && kid == s.kid {
			sameKid++
		}
		same := true
		for name, value := range want {
			if name == "kid" {
				continue
			}
			got, _ := str(m, name)
			if name == "n" || name == "e" {
				g, err1 := b64u.Strict().DecodeString(got)
				w, _ := b64u.DecodeString(value.(string))
				same = same && err1 == nil && new(big.Int).SetBytes(g).Cmp(new(big.Int).SetBytes(w)) == 0
				continue
			}
			same = same && got == value
		}
		if alg, ok := str(m, "alg"); ok && alg != "" && alg != s.method.Alg() {
			same = false
		}
		if _, ok := m["alg"]; ok {
			if _, isStr := str(m, "alg"); !isStr {
				same = false
			}
		}
		for _, priv := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
			if _, ok := m[priv]; ok {
				same = false
			}
		}
		if same && (!hasKid || kid == s.kid) {
			matches++
		}
	}
	switch {
	case matches == 0:
		return "the document publishes no such signature key"
	case hasKid && sameKid > 1:
		return "the kid is listed more than once"
	}
	return ""
}

// FuzzF61PublicKeyPEM: ParsePublicKeyPEM never panics, and a key it
// returns is one NewJWT accepts.
func FuzzF61PublicKeyPEM(f *testing.F) {
	k := f61KeysOnce()
	for _, pub := range []crypto.PublicKey{&k.rsa.PublicKey, &k.ec.PublicKey, k.ed.Public()} {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pub, err := ParsePublicKeyPEM(data)
		if err != nil {
			return
		}
		if _, err := NewJWT(JWTConfig{Keys: map[string]crypto.PublicKey{"k": pub}, Issuer: f61Issuer, Audience: f61Audience}); err != nil {
			t.Fatalf("NewJWT refuses a parsed key: %v", err)
		}
	})
}

// FuzzF61Metadata: readMetadata never panics, and a jwks_uri it returns
// is one NewRemoteKeySet accepts, from a document whose "issuer" is the
// issuer exactly.
func FuzzF61Metadata(f *testing.F) {
	f.Add([]byte(`{"issuer":"` + f61Issuer + `","jwks_uri":"https://issuer.example.com/jwks"}`))
	f.Add([]byte(`{"issuer":"` + f61Issuer + `/","jwks_uri":"http://127.0.0.1:1/jwks"}`))
	f.Add([]byte(`{"ISSUER":"` + f61Issuer + `","issuer":"x","jwks_uri":"http://localhost/jwks"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		uri, err := readMetadata(data, f61Issuer)
		if err != nil {
			return
		}
		var doc map[string]any
		if json.Unmarshal(data, &doc) != nil || doc["issuer"] != f61Issuer || doc["jwks_uri"] != uri {
			t.Fatalf("readMetadata(%q) = %q", data, uri)
		}
		if err := checkKeySetURL(uri); err != nil {
			t.Fatalf("jwks_uri %q: %v", uri, err)
		}
	})
}

// TestF61ECDSASignatureMalleable records that an ES256 token whose
// signature's s is replaced by n-s (another valid ECDSA signature of the
// same header and claims, which anyone holding the token can compute)
// is accepted, as the same principal: a second spelling of one token.
// ECDSA allows it (and signers make either form); JWT's doc says so, and
// tells a user keying a replay or revocation list on a token's text not
// to. This pins what the doc says.
func TestF61ECDSASignatureMalleable(t *testing.T) {
	s := f61Signers()[2]
	tok := f61SignRaw(t, s, f61Header(s, true), f61Claims())
	v := f61JWT(t, f61Public(), nil)
	if _, _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndexByte(tok, '.')
	sig, err := b64u.DecodeString(tok[i+1:])
	if err != nil || len(sig) != 64 {
		t.Fatal(err)
	}
	n := elliptic.P256().Params().N
	flipped := new(big.Int).Sub(n, new(big.Int).SetBytes(sig[32:])).FillBytes(make([]byte, 32))
	tok2 := tok[:i+1] + b64u.EncodeToString(append(sig[:32:32], flipped...))
	if tok2 == tok {
		t.Fatal("the flipped signature is the same")
	}
	// As JWT's doc says: the same claims, the same principal.
	pr1, exp1, err1 := v.Verify(tok)
	pr2, exp2, err2 := v.Verify(tok2)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(pr1, pr2) || !exp1.Equal(exp2) {
		t.Fatalf("second spelling (s -> n-s): %+v %v %v; first %+v %v %v", pr2, exp2, err2, pr1, exp1, err1)
	}
}

// FuzzF61JWTClaimsBuilt builds the header and claims of an Ed25519
// token from choices among edge values (each 2 bytes of ops add one
// member: a name, spelled plainly, escaped or in another case, and a
// value: time claims as floats, huge, negative, strings, null; aud as a
// string or a list; iss, sub and roles variants), signs it, and checks
// an accepted one against f61Oracle.
func FuzzF61JWTClaimsBuilt(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 0, 3, 0, 4, 0}, []byte{0, 0, 0})
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, []byte{1, 2, 3})
	f.Add([]byte{0, 7, 1, 0, 2, 5, 3, 0, 4, 9, 8, 1}, []byte{0, 4, 1})
	signers := f61Signers()
	now := f61Now.Unix()
	num := func(x int64) string { return strconv.FormatInt(x, 10) }
	names := []string{"iss", "aud", "sub", "exp", "nbf", "iat", "roles", "org", "cnf", "SUB", `s\u0075b`, "ſub",
		"org.tid", "Roles", "ISS", "EXP", `\u0065xp`, "aud"}
	times := []string{num(now + 3600), num(now), num(now + 1), num(now - 1), "1772370000.5", num(now) + ".999", "0", "-0",
		"-1", "9e18", "1e19", "-9e18", "253402300799", "253402300800", `"` + num(now+3600) + `"`, "null", "true",
		"[" + num(now+3600) + "]", "1.7723704e9", "0.5", "1e-300"}
	values := map[string][]string{
		"iss": {`"` + f61Issuer + `"`, `"` + f61Issuer + `/"`, `"HTTPS://issuer.example.com"`, `""`, `null`, `["` + f61Issuer + `"]`, `1`},
		"aud": {`"` + f61Audience + `"`, `["` + f61Audience + `"]`, `["x","` + f61Audience + `"]`, `["x"]`, `[]`, `""`,
			`["` + f61Audience + `",1]`, `null`, `{"a":"` + f61Audience + `"}`, `[""]`, `"` + f61Audience + ` "`},
		"sub": {`"alice"`, `"bob"`, `""`, `" alice"`, `"al\u0000ice"`, `"ålice"`, `1`, `null`, `["alice"]`, `"a,b"`},
		"roles": {`"support admin"`, `["support","admin"]`, `"a  b"`, `["a b"]`, `[""]`, `""`, `[]`, `null`, `["a",1]`,
			`"a,b"`, `{"x":"a"}`, `"a\tb"`, `"\u00e9"`},
		"org": {`{"tid":"acme"}`, `{"tid":1}`, `{"tid":"a","TID":"b"}`, `{"tid":"a","tid":"b"}`, `"acme"`, `{}`, `null`,
			`{"tıd":"b","tid":"a"}`, `{"tid":"a","ţid":"b"}`},
		"org.tid": {`"dotted"`, `1`, `null`},
		"cnf":     {`{"jkt":"x"}`, `null`, `{}`},
	}
	headers := []string{
		`{"alg":"EdDSA","kid":"ed"}`, `{"alg":"Ed25519","kid":"ed","typ":"at+jwt"}`, `{"alg":"EdDSA","kid":"ed","typ":"dpop+jwt"}`,
		`{"alg":"EdDSA","kid":"ed","crit":[]}`, `{"alg":"EdDSA","kid":"ec"}`, `{"alg":"EdDSA"}`, `{"alg":"EdDSA","kid":"ed","kid":"ed"}`,
		`{"alg":"EdDSA","kid":"ed","typ":"application/JWT"}`, `{"alg":"EdDSA","kid":"ed","typ":null}`, `{"alg":"eddsa","kid":"ed"}`,
		`{"alg":"EdDSA","kid":"ed","KID":"x"}`, `{"alg":"EdDSA","kid":"ed","jku":"https://evil"}`, `{"alg":"ES256","kid":"ed"}`,
		`{"alg":"none","kid":"ed"}`, `{"alg":"EdDSA","kid":"ed","typ":"JWT","alg":"EdDSA"}`, `{"alg":"EdDSA","kid":"ed","b64":false}`,
	}
	v := f61JWT(f, f61Public(), nil)
	f.Fuzz(func(t *testing.T, ops, hops []byte) {
		var members []string
		for i := 0; i+1 < len(ops) && len(members) < 16; i += 2 {
			name := names[int(ops[i])%len(names)]
			plain := strings.ToLower(strings.NewReplacer(`\u0075`, "u", `\u0065`, "e", "ſ", "s").Replace(name))
			var value string
			switch plain {
			case "exp", "nbf", "iat":
				value = times[int(ops[i+1])%len(times)]
			default:
				vs := values[plain]
				value = vs[int(ops[i+1])%len(vs)]
			}
			members = append(members, `"`+name+`":`+value)
		}
		claims := []byte("{" + strings.Join(members, ",") + "}")
		header := []byte(headers[0])
		which := 3
		if len(hops) > 0 {
			header = []byte(headers[int(hops[0])%len(headers)])
		}
		if len(hops) > 1 && hops[1]%2 == 1 {
			which = 4
		}
		s := signers[which]
		tok := f61SignRaw(t, s, header, claims)
		pr, exp, err := v.Verify(tok)
		if err != nil {
			if !isInvalid(err) {
				t.Fatalf("refusal that is not ErrInvalidJWT: %v", err)
			}
			return
		}
		want, wantExp, why := f61Oracle(s, header, claims)
		if why != "" {
			t.Fatalf("accepted a token the documented checks refuse: %s\nheader %s\nclaims %s", why, header, claims)
		}
		if pr.Subject != want.sub || !slices.Equal(pr.Roles, want.roles) || pr.Attrs["tenant"] != want.tenant ||
			exp.Unix() != wantExp {
			t.Fatalf("principal %+v exp %d, want %+v exp %d\nheader %s\nclaims %s", pr, exp.Unix(), want, wantExp, header, claims)
		}
	})
}
