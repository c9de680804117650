package token

import (
	"context"
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpguard/mcpguard/internal/jsondup"
	"github.com/mcpguard/mcpguard/policy"
)

// ErrInvalidJWT is the error every refusal of a [JWT] unwraps to. The
// error's text gives the reason (expired, wrong audience, unknown key,
// ...) and never contains the token, its signature or any of its claims.
var ErrInvalidJWT = errors.New("token: invalid JWT")

// ErrKeySetUnavailable is the error a [JWT] with a [JWTConfig.KeySet]
// returns for a token it could not judge: the token's "kid" is not in the
// set and the set's last fetch failed (the provider may have rotated that
// key in while its JWK Set URL is down), or the context ended while the
// lookup waited for a fetch. It is not a refusal: it does not unwrap to
// [ErrInvalidJWT], nor, from [JWT.Verifier], to the go-sdk's
// auth.ErrInvalidToken, so that a client is not sent to get a new token
// (which would carry the same kid) but may try again later. It unwraps to
// the fetch's error or the context's too (context.DeadlineExceeded for a
// timeout), and never quotes the token.
var ErrKeySetUnavailable = errors.New("token: JWK Set unavailable")

// maxJWTLen bounds the length of a token before it is parsed.
const maxJWTLen = 8 << 10

// A JWTConfig configures [NewJWT]. Issuer, Audience and exactly one of
// Keys and KeySet are required; every other field has a documented zero
// value.
type JWTConfig struct {
	// Keys are the issuer's public keys by key id ("kid"), as [ParseJWKS]
	// and [ParsePublicKeyPEM] return them: an *rsa.PublicKey (2048 to 8192
	// bits), *ecdsa.PublicKey on P-256, P-384 or P-521, or
	// ed25519.PublicKey (not a point of small order), which verifies every
	// algorithm of its type, or an [AlgKey] holding one of them, which
	// verifies its Alg only (ParseJWKS returns one for a JWK with "alg").
	// A token names its key in its header's "kid"; a token without a
	// "kid" may use the only key when Keys holds exactly one. The map is
	// copied, the keys must not be modified afterwards. Set either Keys or
	// KeySet.
	Keys map[string]crypto.PublicKey
	// KeySet is the issuer's JWK Set fetched from its URL, for keys that
	// the issuer rotates: a token's "kid" is looked up in the set's
	// current keys, and a kid it lacks makes it fetch the set again (see
	// [RemoteKeySet] for how often). A token without a "kid" is tried
	// with every key of the current set for its "alg" (the one key of a
	// set of one), and when none verifies it the set is fetched again,
	// as for a kid it lacks, and tried once more: a provider that signs
	// without kids may rotate its keys too. Set either Keys or KeySet.
	KeySet *RemoteKeySet
	// Issuer is the exact "iss" a token must carry. Required.
	Issuer string
	// Audience is the identifier of this server: a token's "aud" (a string
	// or an array of strings) must contain it. Required.
	Audience string
	// RolesClaim names the claim that holds the caller's roles: a JSON
	// array of strings, or a string of space-separated roles (like OAuth's
	// "scope"). A token without the claim has no roles. Zero means "roles".
	// A name with dots that is not a claim of the token's is read as a path
	// into nested objects: "realm_access.roles" reads Keycloak's realm roles
	// from {"realm_access": {"roles": [...]}}; a claim named with the dots
	// (such as "https://example.com/roles") is read first. In a path, a
	// dot preceded by a backslash is part of a member name, as in
	// Keycloak's mappers: `resource_access.mcp\.example\.com.roles` reads
	// the roles of client "mcp.example.com" from {"resource_access":
	// {"mcp.example.com": {"roles": [...]}}}. Every other dot separates
	// two names, so a path reads one place: a member such as
	// "authz.roles", which a user may be able to add to an object that
	// also holds the issuer's "authz" (a profile merged into a claim),
	// never stands in for the nested one; an object on the path that also
	// names the next step in another letter case ("ROLES" beside "roles")
	// refuses the token.
	RolesClaim string
	// AttrClaims maps names of the principal's Attrs to the claims that
	// hold them, each read as RolesClaim is (a claim's name, or a dotted
	// path into nested objects): {"tenant": "tid", "team":
	// "org.team"}. Such a claim must be a string; a token without it has
	// no such attribute, and one where it is not a string is refused.
	// Nil means no Attrs. NewJWT copies the map; an empty attribute name
	// or claim is an error.
	AttrClaims map[string]string
	// Leeway is the clock skew allowed when checking "exp", "nbf" and
	// "iat". Zero means none: a token is refused from the second it
	// expires. Negative, or over [MaxLeeway], is an error.
	// [JWT.Verifier]'s Expiration is the token's own "exp": give
	// auth.RequireBearerTokenOptions.ClockSkew the same value, or the
	// go-sdk refuses a token within the leeway anyway ([BindSessions]
	// does so itself).
	Leeway time.Duration
	// Types are the header "typ" values accepted (RFC 8725, section
	// 3.11), compared without regard to case and to an "application/"
	// prefix (RFC 7515, section 4.1.9). A token without "typ" is accepted
	// whatever Types holds. Empty means "JWT" and "at+jwt" (RFC 9068's
	// access tokens), which covers "application/at+jwt" too.
	Types []string
	// Now returns the current time. Nil means time.Now. While it reads
	// no clock reading (the zero time of a clock never set up, any time
	// before 1970-01-01 00:00:01 UTC), no token verifies: every "exp"
	// would be ahead of it.
	Now func() time.Time
}

// An AlgKey is a public key bound to the one JWS algorithm it may verify
// (RFC 8725, section 3.1), as a value of [JWTConfig.Keys]: a token that
// selects it is refused unless its header's "alg" is Alg. [ParseJWKS]
// returns one, and a [RemoteKeySet] keeps one, for a JWK that has an "alg"
// member. Key is an *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
// that [NewJWT] accepts, and Alg one of the algorithms of its type:
// "RS256", "RS384", "RS512", "PS256", "PS384" or "PS512" for an RSA key,
// "ES256", "ES384" or "ES512" for an ECDSA key on P-256, P-384 or P-521
// respectively, "Ed25519" (RFC 9864) or "EdDSA" (its deprecated name) for
// an Ed25519 key. NewJWT refuses any other
// AlgKey, among them one with an empty Alg and one whose Key is itself an
// AlgKey, and an *AlgKey: use the value.
type AlgKey struct {
	// Key is the public key.
	Key crypto.PublicKey
	// Alg is the one JWS algorithm ("alg") that Key may verify.
	Alg string
}

// defaultTypes returns the "typ" values accepted when JWTConfig.Types is
// empty.
func defaultTypes() []string { return []string{"JWT", "at+jwt"} }

// allAlgs returns the algorithms a JWT may accept: those of every key type.
func allAlgs() []string {
	return []string{"Ed25519", "EdDSA", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512"}
}

// algEd25519 is RFC 9864's fully specified name of EdDSA with Ed25519, the
// one Ed25519 signatures are to carry from now on: "EdDSA" named any EdDSA
// curve and is deprecated.
const algEd25519 = "Ed25519"

// ed25519Method is the jwt package's EdDSA method under the name
// algEd25519: the same verification, with an Ed25519 key only.
type ed25519Method struct{ *jwt.SigningMethodEd25519 }

func (ed25519Method) Alg() string { return algEd25519 }

// registerEd25519 registers algEd25519 with the jwt package, which looks
// up a token's "alg" in its registry of methods and has no "Ed25519"
// (v5.3), unless it has one already (a later version, or an earlier call).
// [NewJWT] calls it, before any token is parsed. The registry is the
// process's, for every user of the jwt package: the name verifies exactly
// what "EdDSA" verifies with an Ed25519 key. Two calls at once may both
// register it, alike.
func registerEd25519() {
	if jwt.GetSigningMethod(algEd25519) == nil {
		jwt.RegisterSigningMethod(algEd25519, func() jwt.SigningMethod {
			return ed25519Method{jwt.SigningMethodEdDSA}
		})
	}
}

// A JWT verifies signed JSON Web Tokens (RFC 7519) issued by one issuer
// for one audience, and turns them into principals. A JWT is safe for
// concurrent use; its configuration is immutable, its keys change only
// with its [JWTConfig.KeySet].
//
// A token is accepted only if all of the following hold, and refused with
// an error that unwraps to [ErrInvalidJWT] otherwise:
//   - it is at most 8 KiB long and is a compact JWS (three base64url
//     segments, without padding, line breaks or any other character)
//     whose header and claims set are each UTF-8 and name no member twice
//     (parsers differ on which of two they read), and whose claims set
//     names no two claims, nor two members of an object on the roles
//     claim's path, alike under Unicode case folding ("sub" and "SUB" or
//     "ſub"): claims are matched exactly, where encoding/json decoding
//     into a struct (golang-jwt's RegisteredClaims, a Go service the token
//     is passed on to) reads the last of the two;
//   - its header's "alg" is RS256, RS384, RS512, PS256, PS384, PS512 (RSA
//     keys), ES256, ES384, ES512 (ECDSA keys on P-256, P-384, P-521
//     respectively), Ed25519 (RFC 9864) or EdDSA, its deprecated name
//     (Ed25519 keys), and matches the type of the
//     key it selects, and, when that key is an [AlgKey] (a JWK with "alg"),
//     equals its Alg: "none" and HMAC algorithms are never accepted;
//   - its header's "kid" names a configured key, or without a kid the
//     only one, or a key of the remote set (see [JWTConfig.Keys] and
//     [JWTConfig.KeySet]); "jku", "jwk", "x5u" and "x5c" are ignored, keys
//     are never fetched from a URL a token names; a header with "crit" is
//     refused (no extension is understood);
//   - its header's "typ", when present, is one of [JWTConfig.Types]
//     ("JWT" or "at+jwt" by default): a token of another type, such as a
//     DPoP proof ("dpop+jwt") or a logout token ("logout+jwt") signed by
//     the same issuer, is refused;
//   - its signature verifies with that key;
//   - "exp" is present and in the future, "nbf" and "iat", when present,
//     are not in the future (each within [JWTConfig.Leeway]), and each of
//     them is a number of seconds from 1970 to the end of the year 9999;
//   - "iss" equals [JWTConfig.Issuer] and "aud" contains
//     [JWTConfig.Audience];
//   - it has no "cnf" claim: a token bound to a key or a certificate
//     (RFC 8705, RFC 9449) is valid only with a proof of that key, which
//     this verifier cannot check;
//   - "sub" is a non-empty string, the roles claim is absent, an array of
//     strings or a string, each claim of [JWTConfig.AttrClaims] is absent
//     or a string, and the resulting principal passes [CheckPrincipal].
//
// With a KeySet, a token whose "kid" the set lacks, or one without a kid
// that no key of the set verifies, while the set cannot be fetched (see
// [ErrKeySetUnavailable]) is not judged: the error unwraps to
// ErrKeySetUnavailable, not to ErrInvalidJWT.
//
// A token accepted has one spelling but for its ECDSA signature: an
// ES256, ES384 or ES512 signature (r, s) verifies as (r, n-s) too (JWS
// asks for no canonical form, and signers such as crypto/ecdsa make
// either), so anyone who holds such a token can write a second string of
// it, the same claims. Key a replay or revocation list on its claims
// ("jti", or "sub" and "iat"), not on the token's text.
type JWT struct {
	keys       map[string]crypto.PublicKey // nil with keySet; values as checked by configKey
	keySet     *RemoteKeySet
	algs       []string // the algorithms the parser accepts before key selects a key
	types      []string // the "typ" values accepted, normalised
	rolesClaim string
	attrClaims map[string]string // nil: none
	opts       []jwt.ParserOption
	now        func() time.Time
}

// NewJWT returns a verifier for cfg. It returns an error when both or
// neither of Keys and KeySet are set, when KeySet was not made by
// [NewRemoteKeySet], when a key is nil, of another type, an RSA key
// shorter than 2048 bits or longer than 8192, an ECDSA key on another
// curve or off its curve, or an Ed25519 key of the wrong size or of small
// order (such as all zeros: crypto/ed25519 would verify signatures anyone
// can make with it), when an [AlgKey]'s Key is any of
// these or itself an AlgKey, or its Alg is not an algorithm of its Key's
// type (see [AlgKey]), when Issuer or Audience is empty,
// when a Types entry is empty (or "application/" alone), when Leeway is
// negative or over [MaxLeeway], or when AttrClaims holds an empty name.
//
// NewJWT registers the signing method "Ed25519" (RFC 9864) with the jwt
// package (github.com/golang-jwt/jwt/v5), whose registry is the process's,
// unless one is registered already: from then on, another parser of the
// jwt package that does not restrict its methods (WithValidMethods) reads
// that "alg" too, and verifies it as "EdDSA", with an ed25519.PublicKey
// only; its method is not a *jwt.SigningMethodEd25519, so a key function
// that checks for that type refuses it.
func NewJWT(cfg JWTConfig) (*JWT, error) {
	if len(cfg.Keys) == 0 && cfg.KeySet == nil {
		return nil, errors.New("token: JWT: no keys")
	}
	if len(cfg.Keys) != 0 && cfg.KeySet != nil {
		return nil, errors.New("token: JWT: both Keys and KeySet: set one")
	}
	if cfg.KeySet != nil && cfg.KeySet.client == nil {
		return nil, errors.New("token: JWT: a KeySet not made by NewRemoteKeySet")
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
	if cfg.Leeway > MaxLeeway {
		return nil, fmt.Errorf("token: JWT: leeway %v over %v: it would accept tokens that expired that long ago; set the clocks right instead", cfg.Leeway, MaxLeeway)
	}
	attrs, err := copyAttrClaims(cfg.AttrClaims)
	if err != nil {
		return nil, fmt.Errorf("token: JWT: %w", err)
	}
	registerEd25519()
	v := &JWT{keySet: cfg.KeySet, rolesClaim: cfg.RolesClaim, attrClaims: attrs}
	if v.rolesClaim == "" {
		v.rolesClaim = "roles"
	}
	types := cfg.Types
	if len(types) == 0 {
		types = defaultTypes()
	}
	for _, t := range types {
		n := normalType(t)
		if n == "" {
			return nil, fmt.Errorf("token: JWT: empty type %q in Types", t)
		}
		v.types = append(v.types, n)
	}
	if cfg.KeySet != nil {
		// The keys change: accept every algorithm here, and match each
		// token's to the key its kid selects in key.
		v.algs = allAlgs()
	} else {
		v.keys = make(map[string]crypto.PublicKey, len(cfg.Keys))
		algs := map[string]bool{}
		for kid, k := range cfg.Keys {
			ka, err := configKey(k)
			if err != nil {
				return nil, fmt.Errorf("token: JWT: key %q: %v", kid, err)
			}
			v.keys[kid] = k
			for _, a := range ka {
				algs[a] = true
			}
		}
		for a := range algs {
			v.algs = append(v.algs, a)
		}
		sort.Strings(v.algs)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	v.now = now
	v.opts = []jwt.ParserOption{
		jwt.WithValidMethods(v.algs),
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

// configKey checks k, a value of JWTConfig.Keys (a key or an AlgKey),
// and returns the algorithms it may verify.
func configKey(k crypto.PublicKey) ([]string, error) {
	ak, ok := k.(AlgKey)
	if !ok {
		if err := checkKey(k); err != nil {
			return nil, err
		}
		return keyAlgs(k), nil
	}
	if _, nested := ak.Key.(AlgKey); nested {
		return nil, errors.New("AlgKey whose Key is an AlgKey")
	}
	if err := checkKey(ak.Key); err != nil {
		return nil, fmt.Errorf("AlgKey: %v", err)
	}
	if algs := keyAlgs(ak.Key); !slices.Contains(algs, ak.Alg) {
		return nil, fmt.Errorf("AlgKey: Alg %q is not an algorithm of its %T key (want one of %s)", ak.Alg, ak.Key, strings.Join(algs, ", "))
	}
	return []string{ak.Alg}, nil
}

// jwtError is a refusal. It unwraps to ErrInvalidJWT and, when sdk is
// set, to auth.ErrInvalidToken as well.
type jwtError struct {
	reason      string
	sdk         bool
	keyMismatch bool // no key of the token's algorithm (see noKeyVerifies)
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

// mismatch is invalid for a key of another algorithm than the token's.
func mismatch(format string, args ...any) error {
	return &jwtError{reason: fmt.Sprintf(format, args...), keyMismatch: true}
}

// An unjudgedError carries an error of the key set's lookup, which unwraps
// to ErrKeySetUnavailable, through the jwt parser to [JWT.reason].
type unjudgedError struct{ err error }

func (e *unjudgedError) Error() string { return e.err.Error() }
func (e *unjudgedError) Unwrap() error { return e.err }

// An unjudgedAnswer is the Verifier's error for a token it could not
// judge: its text says only that, for an answer to a client, and it
// unwraps to the lookup's error (ErrKeySetUnavailable, the fetch's).
type unjudgedAnswer struct{ err error }

func (e *unjudgedAnswer) Error() string {
	return "token: JWK Set unavailable: the token could not be checked; try again later"
}
func (e *unjudgedAnswer) Unwrap() error { return e.err }

// normalType returns a "typ" value in the form that is compared: lower
// case, without an "application/" prefix.
func normalType(t string) string {
	t = strings.ToLower(t)
	return strings.TrimPrefix(t, "application/")
}

// A keyLookup is what one verification's key function found out, for
// verify: whether the token has no kid and was matched against a remote
// set (noKid), whose generation gen, with keys set to look in instead of
// the set's current ones (the set fetched again after a first attempt).
type keyLookup struct {
	noKid bool
	gen   uint64
	keys  map[string]crypto.PublicKey
}

// keyfunc returns the jwt.Keyfunc of a verification within ctx: it checks
// the header's "typ", selects the key by "kid" and checks that its type
// matches "alg" (which the parser has already checked against v.algs) and,
// for an AlgKey, that "alg" is its Alg. A token without a kid matched
// against a remote set is tried with every key of the set for its alg;
// lk records it.
func (v *JWT) keyfunc(ctx context.Context, lk *keyLookup) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) { return v.key(ctx, t, lk) }
}

func (v *JWT) key(ctx context.Context, t *jwt.Token, lk *keyLookup) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, invalid(`header has "crit" (no extension is supported)`)
	}
	if typ, ok := t.Header["typ"]; ok {
		s, isString := typ.(string)
		if !isString {
			return nil, invalid("typ is not a string")
		}
		if !slices.Contains(v.types, normalType(s)) {
			// The token's typ is not quoted; the accepted ones are ours.
			return nil, invalid("typ not accepted (want %s)", strings.Join(v.types, ", "))
		}
	}
	kid, hasKid := t.Header["kid"]
	s, isString := kid.(string)
	if hasKid && !isString {
		return nil, invalid("kid is not a string")
	}
	// t.Method comes from the jwt registry, so Alg is one of its names,
	// never text of the token's.
	alg := t.Method.Alg()
	var k crypto.PublicKey
	var ok bool
	switch {
	case v.keySet != nil && !hasKid:
		keys := lk.keys
		if keys == nil {
			if _, _, err := v.keySet.lookup(ctx, "", false); err != nil {
				return nil, &unjudgedError{err}
			}
			keys, lk.gen = v.keySet.current()
		}
		lk.noKid = true
		if len(keys) != 1 {
			return candidates(keys, alg)
		}
		k, ok = find(keys, "", false)
	case v.keySet != nil:
		var err error
		if k, ok, err = v.keySet.lookup(ctx, s, hasKid); err != nil {
			return nil, &unjudgedError{err}
		}
	default:
		k, ok = find(v.keys, s, hasKid)
	}
	switch {
	case !ok && !hasKid:
		return nil, invalid("no kid and several keys configured")
	case !ok:
		return nil, invalid("unknown kid")
	}
	if ak, isAlgKey := k.(AlgKey); isAlgKey {
		if alg != ak.Alg {
			return nil, mismatch("algorithm %s does not match the key's alg %s", alg, ak.Alg)
		}
		k = ak.Key
	}
	if !slices.Contains(keyAlgs(k), alg) {
		return nil, mismatch("algorithm %s does not match the key's type", alg)
	}
	return k, nil
}

// candidates returns the keys of a remote set (not of one key) that
// verify alg, in the order of their kids, for a token without a kid: the
// provider's keys are all its own, and one that signs without kids and
// rotates them publishes the old and the new key together for a while.
func candidates(keys map[string]crypto.PublicKey, alg string) (any, error) {
	kids := make([]string, 0, len(keys))
	for kid := range keys {
		kids = append(kids, kid)
	}
	sort.Strings(kids)
	var set jwt.VerificationKeySet
	for _, kid := range kids {
		k := keys[kid]
		if ak, isAlgKey := k.(AlgKey); isAlgKey {
			if ak.Alg != alg {
				continue
			}
			k = ak.Key
		}
		if slices.Contains(keyAlgs(k), alg) {
			set.Keys = append(set.Keys, k)
		}
	}
	switch len(set.Keys) {
	case 0:
		return nil, mismatch("no kid and no key of the set for algorithm %s", alg)
	case 1:
		return set.Keys[0], nil
	}
	return set, nil
}

// checkSegments refuses a token with a character outside base64url and
// the dots between its segments (encoding/base64 skips CR and LF, which
// would make several spellings of one token verify), and one whose header
// or claims set is not UTF-8 or names a member twice (RFC 7515 section
// 5.2, RFC 7519 sections 4 and 7.2): encoding/json reads the last of two
// members, and an invalid byte as U+FFFD; another parser, such as a
// downstream's the token is passed on to, may read the first, or drop the
// byte. Two claims whose names fold alike ("sub" and "SUB") count as one
// named twice: encoding/json reads them into a struct's field as one, the
// last, where the exact names are read here. A segment that does not
// decode is left to the parser.
func checkSegments(tok string) error {
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return invalid("malformed (want a compact JWS: three base64url segments)")
		}
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	topLevel := func(depth int) bool { return depth == 1 }
	for n, what := range [...]struct {
		is, names string
		fold      func(depth int) bool
	}{{"header is", "header names", nil}, {"claims are", "claims name", topLevel}} {
		data, err := base64.RawURLEncoding.Strict().DecodeString(parts[n])
		if err != nil {
			return nil
		}
		if !utf8.Valid(data) {
			return invalid("%s not UTF-8", what.is)
		}
		if _, _, dup := jsondup.Member(data, what.fold); dup {
			return invalid("%s a member twice", what.names)
		}
	}
	return nil
}

// maxJWTTime is the latest time claim a token may carry, in seconds since
// 1970: the end of the year 9999.
const maxJWTTime = 253402300799

// Verify checks tok (see [JWT] for every check) and returns its principal,
// whose Subject is "sub", Roles the roles claim (nil without one) and
// Attrs the claims [JWTConfig.AttrClaims] names (nil without any), and
// the time of its "exp". Every refusal is an
// error that unwraps to [ErrInvalidJWT] and says why without quoting the
// token; a token it could not judge, an error that unwraps to
// [ErrKeySetUnavailable].
//
// With a [JWTConfig.KeySet], a lookup that fetches the set is bounded by
// the set's fetch timeout (three of them when a discovered set reads its
// discovery document again: see [RemoteKeySet]); [JWT.Authenticate] and
// [JWT.Verifier] also end it with their context.
func (v *JWT) Verify(tok string) (*policy.Principal, time.Time, error) {
	return v.verify(context.Background(), tok)
}

func (v *JWT) verify(ctx context.Context, tok string) (*policy.Principal, time.Time, error) {
	if v == nil || v.now == nil {
		return nil, time.Time{}, invalid("a JWT not made by NewJWT verifies no token")
	}
	if tok == "" {
		return nil, time.Time{}, invalid("empty token")
	}
	if len(tok) > maxJWTLen {
		return nil, time.Time{}, invalid("longer than %d bytes", maxJWTLen)
	}
	if err := checkSegments(tok); err != nil {
		return nil, time.Time{}, err
	}
	if v.now().Unix() <= 0 {
		return nil, time.Time{}, invalid("the verifier's clock (JWTConfig.Now) reads no time: zero or before 1970")
	}
	var lk keyLookup
	claims := jwt.MapClaims{}
	t, err := jwt.ParseWithClaims(tok, claims, v.keyfunc(ctx, &lk), v.opts...)
	if err != nil && lk.noKid && noKeyVerifies(err) {
		// A token without a kid that no key of the remote set verifies:
		// the provider may have rotated its keys; fetch the set again
		// (at most once per MinRefreshInterval, as for an unknown kid)
		// and try the new one.
		keys, gen, changed, ferr := v.keySet.refetch(ctx, lk.gen)
		if ferr != nil {
			return nil, time.Time{}, ferr
		}
		if changed {
			lk = keyLookup{gen: gen, keys: keys}
			claims = jwt.MapClaims{}
			t, err = jwt.ParseWithClaims(tok, claims, v.keyfunc(ctx, &lk), v.opts...)
		}
	}
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
	if _, present := claims["cnf"]; present {
		// A sender-constrained token (RFC 8705 mTLS, RFC 9449 DPoP) is only
		// valid with a proof of its key, which a bearer verifier cannot
		// check: accepting it would make a stolen one usable.
		return nil, time.Time{}, invalid("bound to a key or a certificate (cnf), which is not checked")
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
	attrs, err := readAttrs(claims, v.attrClaims)
	if err != nil {
		return nil, time.Time{}, invalid("%v", err)
	}
	pr := &policy.Principal{Subject: sub, Roles: roles, Attrs: attrs}
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
	roles, err := readRoles(claims, v.rolesClaim)
	if err != nil {
		return nil, invalid("%v", err)
	}
	return roles, nil
}

// readRoles reads the roles claim name of claims (a JWT's, or an
// introspection answer's): an array of strings, or a string of
// space-separated roles; nil when it is absent. A name with dots that is
// not a member of claims is read as a path of member names separated by
// dots ("realm_access.roles" is claims["realm_access"]["roles"]); a dot
// preceded by a backslash is part of a name
// ("resource_access.mcp\.example\.com.roles" reads the roles of client
// "mcp.example.com"). A path reads one place: a member whose name holds
// dots never stands in for a nested one, so that whoever names members
// in an object on the path (a user-editable profile merged into it)
// cannot choose the roles. A member missing on the way means no roles, a
// step into something that is not a JSON object is an error, and so is
// an object on the path that names the step's member in another letter
// case too ("ROLES" beside "roles", which a Go struct reads as one).
// Errors give the reason without quoting a value.
func readRoles(claims map[string]any, name string) ([]string, error) {
	raw, ok, err := claimAt(claims, name)
	if err != nil || !ok {
		return nil, err
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
				return nil, fmt.Errorf("%s claim holds a value that is not a string", name)
			}
			roles = append(roles, s)
		}
		return roles, nil
	}
	return nil, fmt.Errorf("%s claim is neither a string nor an array of strings", name)
}

// claimAt returns the claim name of claims: the member of that name, else,
// for a name with dots, the nested one it is the path of (see readRoles).
func claimAt(claims map[string]any, name string) (any, bool, error) {
	raw, ok := claims[name]
	if !ok && strings.Contains(name, ".") {
		return nestedClaim(claims, name)
	}
	return raw, ok, nil
}

// copyAttrClaims returns a copy of spec, a JWTConfig's or an
// IntrospectionConfig's AttrClaims, checked: nil for none.
func copyAttrClaims(spec map[string]string) (map[string]string, error) {
	if len(spec) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(spec))
	for attr, claim := range spec {
		if attr == "" || claim == "" {
			return nil, errors.New("AttrClaims: an empty attribute name or claim")
		}
		out[attr] = claim
	}
	return out, nil
}

// readAttrs reads the attributes spec maps to claims of claims (see
// [JWTConfig.AttrClaims]): nil when spec is, or none is present. Errors
// name the claim without quoting a value.
func readAttrs(claims map[string]any, spec map[string]string) (map[string]string, error) {
	var attrs map[string]string
	for attr, claim := range spec {
		raw, ok, err := claimAt(claims, claim)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		v, isString := raw.(string)
		if !isString {
			return nil, fmt.Errorf("%s claim is not a string", claim)
		}
		if attrs == nil {
			attrs = make(map[string]string, len(spec))
		}
		attrs[attr] = v
	}
	return attrs, nil
}

// nestedClaim reads the claim path: member names separated by dots, a
// dot preceded by a backslash being part of a name.
func nestedClaim(claims map[string]any, path string) (any, bool, error) {
	var cur any = claims
	for _, name := range splitPath(path) {
		obj, isObject := cur.(map[string]any)
		if !isObject {
			return nil, false, fmt.Errorf("%s claim: a member on its path is not an object", path)
		}
		var present bool
		if cur, present = obj[name]; !present {
			return nil, false, nil
		}
		for k := range obj {
			if k != name && strings.EqualFold(k, name) {
				return nil, false, fmt.Errorf("%s claim: an object on its path names a member twice, in two letter cases", path)
			}
		}
	}
	return cur, true, nil
}

// splitPath splits a claim path at every dot that no backslash precedes,
// and turns each `\.` into a dot (as Keycloak's mappers read claim names).
func splitPath(path string) []string {
	var names []string
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path) && path[i+1] == '.':
			b.WriteByte('.')
			i++
		case path[i] == '.':
			names = append(names, b.String())
			b.Reset()
		default:
			b.WriteByte(path[i])
		}
	}
	return append(names, b.String())
}

// noKeyVerifies reports whether err, the parser's for a token without a
// kid, says that no key of the set verifies it: a signature that does not
// verify, or no key of the token's algorithm (a key of another type or
// alg).
func noKeyVerifies(err error) bool {
	if errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		return true
	}
	var je *jwtError
	return errors.As(err, &je) && je.keyMismatch
}

// reason turns an error of the jwt parser into a refusal. It never uses
// the parser's own text, which may quote parts of the token.
func (v *JWT) reason(t *jwt.Token, claims jwt.MapClaims, err error) error {
	var je *jwtError
	var ue *unjudgedError
	switch {
	case errors.As(err, &ue):
		return ue.err
	case errors.As(err, &je):
		return &jwtError{reason: je.reason}
	case errors.Is(err, jwt.ErrTokenMalformed):
		return invalid("malformed (want a compact JWS: three base64url segments)")
	case t != nil && t.Method == nil:
		return invalid("missing or unsupported algorithm")
	case t != nil && !slices.Contains(v.algs, t.Method.Alg()):
		// t.Method comes from the jwt registry, so Alg is one of its
		// names, never text of the token's.
		return invalid("algorithm %s not accepted", t.Method.Alg())
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return invalid("signature does not verify")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// The parser reads an "exp" of 0 as none, and an "iss" that is not
		// a string as one of the wrong type, not as a missing one.
		if x, ok := claims["exp"]; !ok || x == float64(0) {
			return invalid("missing exp claim (or an exp of 0)")
		}
		if iss, ok := claims["iss"]; !ok || iss == "" {
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

// Authenticate returns the principal of tok, as [JWT.Verify] does: *JWT is
// a gateway.Authenticator. ctx bounds a fetch of the [JWTConfig.KeySet].
func (v *JWT) Authenticate(ctx context.Context, tok string) (*policy.Principal, error) {
	pr, _, err := v.verify(ctx, tok)
	return pr, err
}

// Verifier returns a TokenVerifier over v for the go-sdk's
// auth.RequireBearerToken: a token that [JWT.Verify] accepts gives a
// TokenInfo whose UserID is its subject, whose Scopes are its roles (so
// that RequireBearerTokenOptions.Scopes requires roles), whose Extra holds
// its Attrs ([ExtraAttrs]) and whose Expiration is its "exp"; any other
// is an error that unwraps to both auth.ErrInvalidToken (the go-sdk
// answers 401 with the error's text) and [ErrInvalidJWT], but one it could
// not judge, which unwraps to [ErrKeySetUnavailable] only (the go-sdk
// answers 500, [BindSessions] 503 on a bound session), and whose text,
// which the go-sdk sends a caller not yet authenticated, says only that
// (the set's URL and the fetch's failure are in the error it wraps).
func (v *JWT) Verifier() auth.TokenVerifier {
	return func(ctx context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		pr, exp, err := v.verify(ctx, tok)
		if err != nil {
			var je *jwtError
			switch {
			case errors.As(err, &je):
				return nil, &jwtError{reason: je.reason, sdk: true}
			case errors.Is(err, ErrKeySetUnavailable):
				// The go-sdk answers it 500 with its text, to a caller
				// not yet authenticated: not the set's URL nor the
				// fetch's failure (kept for errors.Is and the log).
				return nil, &unjudgedAnswer{err}
			}
			return nil, fmt.Errorf("%w: %w", auth.ErrInvalidToken, err)
		}
		return withAttrs(&auth.TokenInfo{UserID: pr.Subject, Scopes: slices.Clone(pr.Roles), Expiration: exp}, pr), nil
	}
}
