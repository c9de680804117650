package token

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/policy"
)

// ErrInvalidJWT is the error every refusal of a [JWT] unwraps to. The
// error's text gives the reason (expired, wrong audience, unknown key,
// ...) and never contains the token, its signature or any of its claims.
var ErrInvalidJWT = errors.New("token: invalid JWT")

// maxJWTLen bounds the length of a token before it is parsed.
const maxJWTLen = 8 << 10

// A JWTConfig configures [NewJWT]. Keys, Issuer and Audience are required;
// every other field has a documented zero value.
type JWTConfig struct {
	// Keys are the issuer's public keys by key id ("kid"): *rsa.PublicKey
	// (at least 2048 bits), *ecdsa.PublicKey on P-256, P-384 or P-521, or
	// ed25519.PublicKey, as [ParseJWKS] and [ParsePublicKeyPEM] return them.
	// A token names its key in its header's "kid"; a token without a "kid"
	// may use the only key when Keys holds exactly one. Required; the map
	// is copied, the keys must not be modified afterwards.
	Keys map[string]crypto.PublicKey
	// Issuer is the exact "iss" a token must carry. Required.
	Issuer string
	// Audience is the identifier of this server: a token's "aud" (a string
	// or an array of strings) must contain it. Required.
	Audience string
	// RolesClaim names the claim that holds the caller's roles: a JSON
	// array of strings, or a string of space-separated roles (like OAuth's
	// "scope"). A token without the claim has no roles. Zero means "roles".
	RolesClaim string
	// Leeway is the clock skew allowed when checking "exp", "nbf" and
	// "iat". Zero means none: a token is refused from the second it
	// expires. Negative is an error. [JWT.Verifier]'s Expiration is the
	// token's own "exp": give auth.RequireBearerTokenOptions.ClockSkew the
	// same value, or the go-sdk refuses a token within the leeway anyway.
	Leeway time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// A JWT verifies signed JSON Web Tokens (RFC 7519) issued by one issuer
// for one audience, and turns them into principals. A JWT is immutable and
// safe for concurrent use.
//
// A token is accepted only if all of the following hold, and refused with
// an error that unwraps to [ErrInvalidJWT] otherwise:
//   - it is at most 8 KiB long and is a compact JWS (three base64url
//     segments, without padding);
//   - its header's "alg" is RS256, RS384, RS512, PS256, PS384, PS512 (RSA
//     keys), ES256, ES384, ES512 (ECDSA keys on P-256, P-384, P-521
//     respectively) or EdDSA (Ed25519 keys), and matches the type of the
//     key it selects: "none" and HMAC algorithms are never accepted;
//   - its header's "kid" names a configured key (see [JWTConfig.Keys]);
//     "jku", "jwk", "x5u" and "x5c" are ignored, keys are never fetched
//     from a token; a header with "crit" is refused (no extension is
//     understood);
//   - its signature verifies with that key;
//   - "exp" is present and in the future, "nbf" and "iat", when present,
//     are not in the future (each within [JWTConfig.Leeway]), and each of
//     them is a number of seconds from 1970 to the end of the year 9999;
//   - "iss" equals [JWTConfig.Issuer] and "aud" contains
//     [JWTConfig.Audience];
//   - "sub" is a non-empty string, the roles claim is absent, an array of
//     strings or a string, and the resulting principal passes
//     [CheckPrincipal].
type JWT struct {
	keys       map[string]crypto.PublicKey
	rolesClaim string
	opts       []jwt.ParserOption
}

// NewJWT returns a verifier for cfg. It returns an error when Keys is
// empty, when a key is nil, of another type, an RSA key shorter than 2048
// bits, an ECDSA key on another curve or off its curve, or an Ed25519 key
// of the wrong size, when Issuer or Audience is empty, or when Leeway is
// negative.
func NewJWT(cfg JWTConfig) (*JWT, error) {
	if len(cfg.Keys) == 0 {
		return nil, errors.New("token: JWT: no keys")
	}
	if cfg.Issuer == "" {
		return nil, errors.New("token: JWT: no issuer")
	}
	if cfg.Audience == "" {
		return nil, errors.New("token: JWT: no audience")
	}
	if cfg.Leeway < 0 {
		return nil, errors.New("token: JWT: negative leeway")
	}
	v := &JWT{
		keys:       make(map[string]crypto.PublicKey, len(cfg.Keys)),
		rolesClaim: cfg.RolesClaim,
	}
	if v.rolesClaim == "" {
		v.rolesClaim = "roles"
	}
	algs := map[string]bool{}
	for kid, k := range cfg.Keys {
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("token: JWT: key %q: %v", kid, err)
		}
		v.keys[kid] = k
		for _, a := range keyAlgs(k) {
			algs[a] = true
		}
	}
	methods := make([]string, 0, len(algs))
	for a := range algs {
		methods = append(methods, a)
	}
	sort.Strings(methods)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	v.opts = []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(now),
		jwt.WithStrictDecoding(),
	}
	return v, nil
}

// jwtError is a refusal. It unwraps to ErrInvalidJWT and, when sdk is
// set, to auth.ErrInvalidToken as well.
type jwtError struct {
	reason string
	sdk    bool
}

func (e *jwtError) Error() string { return ErrInvalidJWT.Error() + ": " + e.reason }

func (e *jwtError) Unwrap() []error {
	if e.sdk {
		return []error{ErrInvalidJWT, auth.ErrInvalidToken}
	}
	return []error{ErrInvalidJWT}
}

func invalid(format string, args ...any) error {
	return &jwtError{reason: fmt.Sprintf(format, args...)}
}

// key is the jwt.Keyfunc: it selects the key by "kid" and checks that its
// type matches "alg" (which the parser has already checked against the
// algorithms of all configured keys).
func (v *JWT) key(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, invalid(`header has "crit" (no extension is supported)`)
	}
	var k crypto.PublicKey
	switch kid, ok := t.Header["kid"]; {
	case !ok:
		if len(v.keys) != 1 {
			return nil, invalid("no kid and several keys configured")
		}
		for _, only := range v.keys {
			k = only
		}
	default:
		s, isString := kid.(string)
		if !isString {
			return nil, invalid("kid is not a string")
		}
		if k, ok = v.keys[s]; !ok {
			return nil, invalid("unknown kid")
		}
	}
	if !slices.Contains(keyAlgs(k), t.Method.Alg()) {
		return nil, invalid("algorithm %s does not match the key's type", t.Method.Alg())
	}
	return k, nil
}

// maxJWTTime is the latest time claim a token may carry, in seconds since
// 1970: the end of the year 9999.
const maxJWTTime = 253402300799

// Verify checks tok (see [JWT] for every check) and returns its principal,
// whose Subject is "sub" and Roles the roles claim (nil without one), and
// the time of its "exp". The principal has no Attrs. Every refusal is an
// error that unwraps to [ErrInvalidJWT] and says why without quoting the
// token.
func (v *JWT) Verify(tok string) (*policy.Principal, time.Time, error) {
	if tok == "" {
		return nil, time.Time{}, invalid("empty token")
	}
	if len(tok) > maxJWTLen {
		return nil, time.Time{}, invalid("longer than %d bytes", maxJWTLen)
	}
	claims := jwt.MapClaims{}
	t, err := jwt.ParseWithClaims(tok, claims, v.key, v.opts...)
	if err != nil {
		return nil, time.Time{}, v.reason(t, claims, err)
	}
	// The parser turns a time claim into a time.Time that wraps around for
	// huge values (an "nbf" of 9.2e18 s reads as long past): check the
	// range of every time claim it relied on.
	for _, name := range [...]string{"exp", "nbf", "iat"} {
		if x, present := claims[name]; present {
			if f, ok := x.(float64); !ok || !(f >= 0 && f <= maxJWTTime) {
				return nil, time.Time{}, invalid("%s claim out of range", name)
			}
		}
	}
	sub, ok := claims["sub"].(string)
	if _, present := claims["sub"]; present && !ok {
		return nil, time.Time{}, invalid("sub claim is not a string")
	}
	if sub == "" {
		return nil, time.Time{}, invalid("missing or empty sub claim")
	}
	roles, err := v.roles(claims)
	if err != nil {
		return nil, time.Time{}, err
	}
	pr := &policy.Principal{Subject: sub, Roles: roles}
	if err := CheckPrincipal(pr); err != nil {
		return nil, time.Time{}, invalid("%v", err)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil { // checked by the parser
		return nil, time.Time{}, invalid("exp claim is missing or not a number")
	}
	return pr, exp.Time, nil
}

// roles reads the roles claim.
func (v *JWT) roles(claims jwt.MapClaims) ([]string, error) {
	raw, ok := claims[v.rolesClaim]
	if !ok {
		return nil, nil
	}
	switch r := raw.(type) {
	case string:
		var roles []string
		for _, s := range strings.Split(r, " ") {
			if s != "" {
				roles = append(roles, s)
			}
		}
		return roles, nil
	case []any:
		roles := make([]string, 0, len(r))
		for _, x := range r {
			s, ok := x.(string)
			if !ok {
				return nil, invalid("%s claim holds a value that is not a string", v.rolesClaim)
			}
			roles = append(roles, s)
		}
		return roles, nil
	}
	return nil, invalid("%s claim is neither a string nor an array of strings", v.rolesClaim)
}

// reason turns an error of the jwt parser into a refusal. It never uses
// the parser's own text, which may quote parts of the token.
func (v *JWT) reason(t *jwt.Token, claims jwt.MapClaims, err error) error {
	var je *jwtError
	switch {
	case errors.As(err, &je):
		return &jwtError{reason: je.reason}
	case errors.Is(err, jwt.ErrTokenMalformed):
		return invalid("malformed (want a compact JWS: three base64url segments)")
	case t != nil && t.Method == nil:
		return invalid("missing or unsupported algorithm")
	case t != nil && !slices.Contains(v.methods(), t.Method.Alg()):
		// t.Method comes from the jwt registry, so Alg is one of its
		// names, never text of the token's.
		return invalid("algorithm %s not accepted", t.Method.Alg())
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return invalid("signature does not verify")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		if _, ok := claims["exp"]; !ok {
			return invalid("missing exp claim")
		}
		if iss, _ := claims["iss"].(string); iss == "" {
			return invalid("missing or empty iss claim")
		}
		return invalid("missing or empty aud claim")
	case errors.Is(err, jwt.ErrInvalidType):
		return invalid("exp, nbf, iat, iss or aud claim of the wrong type")
	case errors.Is(err, jwt.ErrTokenExpired):
		return invalid("expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return invalid("not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return invalid("issued in the future (iat)")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return invalid("wrong issuer")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return invalid("wrong audience")
	}
	return invalid("cannot be verified")
}

// methods returns the algorithms the configured keys accept.
func (v *JWT) methods() []string {
	var m []string
	for _, k := range v.keys {
		m = append(m, keyAlgs(k)...)
	}
	return m
}

// Authenticate returns the principal of tok, as [JWT.Verify] does: *JWT is
// a gateway.Authenticator. ctx is not used.
func (v *JWT) Authenticate(_ context.Context, tok string) (*policy.Principal, error) {
	pr, _, err := v.Verify(tok)
	return pr, err
}

// Verifier returns a TokenVerifier over v for the go-sdk's
// auth.RequireBearerToken: a token that [JWT.Verify] accepts gives a
// TokenInfo whose UserID is its subject, whose Scopes are its roles (so
// that RequireBearerTokenOptions.Scopes requires roles) and whose
// Expiration is its "exp"; any other is an error that unwraps to both
// auth.ErrInvalidToken (the go-sdk answers 401 with the error's text) and
// [ErrInvalidJWT].
func (v *JWT) Verifier() auth.TokenVerifier {
	return func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		pr, exp, err := v.Verify(tok)
		if err != nil {
			var je *jwtError
			if errors.As(err, &je) {
				return nil, &jwtError{reason: je.reason, sdk: true}
			}
			return nil, fmt.Errorf("%w: %w", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: pr.Subject, Scopes: slices.Clone(pr.Roles), Expiration: exp}, nil
	}
}
