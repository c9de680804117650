package token

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// ParseJWKS parses an RFC 7517 JWK Set, {"keys": [...]}, of public keys and
// returns them by key id, for [JWTConfig.Keys]. It reads keys of kty "RSA"
// (n, e), "EC" (crv P-256, P-384 or P-521; x, y: a point on the curve) and
// "OKP" (crv Ed25519; x); members are base64url without padding, strictly
// decoded. Member names are matched exactly (RFC 7517): "USE" or "Kid" is
// an unknown member, ignored. A key whose "use" is present and not "sig",
// or whose "key_ops" is present and lacks "verify", is skipped. A key's
// "alg", when present, must be one that [JWT] accepts for that key.
//
// A key without "alg" is returned bare: an *rsa.PublicKey,
// *ecdsa.PublicKey or ed25519.PublicKey, which verifies every algorithm
// of its type. A key with "alg" is returned as an [AlgKey] holding that
// key and its "alg", which verifies that algorithm only (RFC 8725,
// section 3.1): an RSA key published for RS256 does not verify a PS256 or
// RS512 token. Callers that type-switch on the returned values must handle
// AlgKey.
//
// It returns an error for malformed JSON, a set without "keys", any key
// with a private member ("d", "p", "q", "dp", "dq", "qi", "oth", "k"),
// skipped or not, and, among the keys it keeps: a key without a "kid", two
// keys with the same "kid", an unknown kty or crv, a malformed member, or
// a key that [NewJWT] would refuse (such as an RSA key under 2048 bits or
// over 8192, or an Ed25519 key of small order); and when no key is kept.
// Errors name the key by its kid, or by its position when it has none or
// its kid is over 64 bytes long.
func ParseJWKS(data []byte) (map[string]crypto.PublicKey, error) {
	keys, _, err := parseJWKS(data, false)
	return keys, err
}

// parseJWKS is ParseJWKS; when lenient, a key that ParseJWKS would refuse
// the set for (a private member, no kid, an unknown kty or crv, a
// malformed member, a key NewJWT would refuse) is left out instead, and so
// is every copy of a kid listed twice (a signature key with a private
// member counts as a copy, and so does a key with a member of the wrong
// type whose kid reads, unless its use or key_ops reads as another use):
// skipped holds one error for each key left out. A set left with no key
// is still an error.
func parseJWKS(data []byte, lenient bool) (map[string]crypto.PublicKey, []error, error) {
	var skipped []error
	keys, err := parseJWKSKeys(data, func(err error) error {
		if !lenient {
			return err
		}
		skipped = append(skipped, err)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(keys) == 0 {
		return nil, skipped, errors.New("token: JWK Set: no signature verification keys")
	}
	return keys, skipped, nil
}

// parseJWKSKeys reads the keys of a JWK Set, as ParseJWKS returns them (an
// AlgKey for a JWK with "alg"). The error of a key is passed to bad: when
// bad returns an error, parsing stops with it, else the key is left out.
// A kid listed twice is such an error for its second copy, and for its
// first too when that was a usable key: every copy is left out. A
// signature key with a private member lists its kid too, and so does a
// key with a member of the wrong type whose kid reads (see mayVerify).
func parseJWKSKeys(data []byte, bad func(err error) error) (map[string]crypto.PublicKey, error) {
	// A map matches "keys" exactly, where a struct would take "KEYS" too
	// (see exactMembers).
	var set map[string]json.RawMessage
	var list []json.RawMessage
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, errors.New(`token: JWK Set: not a JSON object {"keys": [...]}`)
	}
	if raw, ok := set["keys"]; ok && json.Unmarshal(raw, &list) != nil {
		return nil, errors.New(`token: JWK Set: not a JSON object {"keys": [...]}`)
	}
	if list == nil {
		return nil, errors.New(`token: JWK Set: no "keys" array`)
	}
	keys := make(map[string]crypto.PublicKey, len(list))
	seen := map[string]bool{}    // the kids of the signature keys, kept or not (private ones too)
	names := map[string]string{} // how the errors name the keys kept
	// listed records another copy of a signature key's kid, one not kept:
	// a copy kept before is left out too, and counted as such.
	listed := func(kid string) error {
		seen[kid] = true
		if first, ok := names[kid]; ok {
			delete(keys, kid)
			delete(names, kid)
			return bad(fmt.Errorf("token: %s: kid listed again later", first))
		}
		return nil
	}
	for n, raw := range list {
		var members map[string]json.RawMessage
		var jwk jwkMembers
		membersErr := json.Unmarshal(raw, &members)
		if membersErr != nil || json.Unmarshal(exactMembers(raw, members), &jwk) != nil {
			if err := bad(fmt.Errorf("token: JWK %d: not an object of string members", n+1)); err != nil {
				return nil, err
			}
			// An object whose kid reads (encoding/json reads the members
			// that have the right type) is a copy of that kid all the
			// same, unless it reads as a key for another use.
			if membersErr == nil && jwk.Kid != "" && mayVerify(members) {
				if err := listed(jwk.Kid); err != nil {
					return nil, err
				}
			}
			continue
		}
		name := fmt.Sprintf("JWK %d", n+1)
		switch {
		case len(jwk.Kid) > maxShownKid:
			// Errors stay short: a long kid is not quoted.
			name = fmt.Sprintf("JWK %d (a kid of %d bytes)", n+1, len(jwk.Kid))
		case jwk.Kid != "":
			name = fmt.Sprintf("JWK %q", jwk.Kid)
		}
		// Members of private or secret key material (RFC 7518, sections
		// 6.2.2, 6.3.2 and 6.4; RFC 8037).
		private := ""
		for _, m := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
			if _, ok := members[m]; ok && private == "" {
				private = m
			}
		}
		_, hasUse := members["use"]
		_, hasOps := members["key_ops"]
		signing := (!hasUse || jwk.Use == "sig") && (!hasOps || slices.Contains(jwk.KeyOps, "verify"))
		if private != "" {
			// A private copy is a listing of its kid too: which key the
			// kid names cannot be told.
			if err := bad(fmt.Errorf("token: %s: has private member %q: a JWK Set for verification holds public keys only", name, private)); err != nil {
				return nil, err
			}
			if signing && jwk.Kid != "" {
				if err := listed(jwk.Kid); err != nil {
					return nil, err
				}
			}
			continue
		}
		if !signing {
			continue
		}
		if jwk.Kid == "" {
			if err := bad(fmt.Errorf("token: %s: no kid", name)); err != nil {
				return nil, err
			}
			continue
		}
		if seen[jwk.Kid] {
			if err := bad(fmt.Errorf("token: %s: kid listed twice", name)); err != nil {
				return nil, err
			}
			if err := listed(jwk.Kid); err != nil {
				return nil, err
			}
			continue
		}
		seen[jwk.Kid] = true
		var k crypto.PublicKey
		var err error
		switch jwk.Kty {
		case "RSA":
			k, err = rsaJWK(jwk.N, jwk.E)
		case "EC":
			k, err = ecJWK(jwk.Crv, jwk.X, jwk.Y)
		case "OKP":
			if jwk.Crv != "Ed25519" {
				err = errors.New(`crv must be "Ed25519"`)
				break
			}
			var x []byte
			if x, err = b64("x", jwk.X); err == nil {
				k = ed25519.PublicKey(x)
			}
		default:
			err = errors.New(`kty must be "RSA", "EC" or "OKP"`)
		}
		if err == nil {
			err = checkKey(k)
		}
		if err == nil && jwk.Alg != "" && !slices.Contains(keyAlgs(k), jwk.Alg) {
			err = errors.New("alg does not match the key")
		}
		if err != nil {
			if err := bad(fmt.Errorf("token: %s: %v", name, err)); err != nil {
				return nil, err
			}
			continue
		}
		if jwk.Alg != "" {
			k = AlgKey{Key: k, Alg: jwk.Alg}
		}
		keys[jwk.Kid] = k
		names[jwk.Kid] = name
	}
	return keys, nil
}

// jwkMembers are the members of a JWK that parseJWKSKeys reads, named
// jwkNames.
type jwkMembers struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Alg    string   `json:"alg"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
}

// jwkNames are the names of the members in jwkMembers.
func jwkNames() [10]string {
	return [...]string{"kty", "kid", "use", "key_ops", "alg", "n", "e", "crv", "x", "y"}
}

// exactMembers returns raw, a JSON object whose members are members, to
// be decoded into a jwkMembers; or, when a name of members is not one of
// jwkNames but matches one under case folding, raw without such members.
// Member names are case-sensitive (RFC 7517, section 4): "USE" or "uſe"
// (with the long s) is an unknown member, ignored, where encoding/json,
// which matches members to fields under case folding, would read either
// as "use", the last one winning, and keep a key whose "use" is "enc" as a
// signature key. Members named exactly stay as they are, duplicates too.
func exactMembers(raw []byte, members map[string]json.RawMessage) []byte {
	names := jwkNames()
	folded := false
	for name := range members {
		if slices.Contains(names[:], name) {
			continue
		}
		for _, n := range names {
			folded = folded || strings.EqualFold(name, n)
		}
	}
	if !folded {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return raw
	}
	out := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		var value json.RawMessage
		if err != nil || dec.Decode(&value) != nil {
			return raw
		}
		if name, _ := t.(string); slices.Contains(names[:], name) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(append(append(out, '"'), name...), `":`...), value...)
		}
	}
	return append(out, '}')
}

// mayVerify reports whether a JWK whose members do not all read as they
// should may be a signature key: unless its "use" reads as a string other
// than "sig", or its "key_ops" as an array of strings without "verify"
// (null reads as "" or as no strings, as in a key that parseJWKSKeys reads
// whole, which is skipped then). A "use" or "key_ops" that does not read
// (a number, an array with a number) leaves it undecided, so it may.
func mayVerify(members map[string]json.RawMessage) bool {
	var use string
	if raw, ok := members["use"]; ok && json.Unmarshal(raw, &use) == nil && use != "sig" {
		return false
	}
	var ops []string
	if raw, ok := members["key_ops"]; ok && json.Unmarshal(raw, &ops) == nil && !slices.Contains(ops, "verify") {
		return false
	}
	return true
}

// maxShownKid is the longest kid an error quotes; a key with a longer one
// is named by its position.
const maxShownKid = 64

// b64 decodes member name of a JWK: base64url without padding, strict.
func b64(name, s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("missing %s", name)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s is not base64url without padding", name)
	}
	return b, nil
}

func rsaJWK(n64, e64 string) (*rsa.PublicKey, error) {
	n, err := b64("n", n64)
	if err != nil {
		return nil, err
	}
	e, err := b64("e", e64)
	if err != nil {
		return nil, err
	}
	if len(e) > 4 {
		return nil, errors.New("e is too large")
	}
	var ei int
	for _, c := range e {
		ei = ei<<8 | int(c)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: ei}, nil
}

func ecJWK(crv, x64, y64 string) (*ecdsa.PublicKey, error) {
	var c elliptic.Curve
	switch crv {
	case "P-256":
		c = elliptic.P256()
	case "P-384":
		c = elliptic.P384()
	case "P-521":
		c = elliptic.P521()
	default:
		return nil, errors.New(`crv must be "P-256", "P-384" or "P-521"`)
	}
	x, err := b64("x", x64)
	if err != nil {
		return nil, err
	}
	y, err := b64("y", y64)
	if err != nil {
		return nil, err
	}
	size := (c.Params().BitSize + 7) / 8
	if len(x) != size || len(y) != size {
		return nil, fmt.Errorf("x and y must be %d bytes each", size)
	}
	k, err := ecdsa.ParseUncompressedPublicKey(c, slices.Concat([]byte{4}, x, y))
	if err != nil {
		return nil, errors.New("x, y is not a point on the curve")
	}
	return k, nil
}

// ParsePublicKeyPEM parses one PEM block of type "PUBLIC KEY" (a PKIX,
// SubjectPublicKeyInfo, public key, as "openssl pkey -pubout" writes it)
// for [JWTConfig.Keys]. It returns an error when data holds no PEM block,
// a block of another type (a private key or a certificate among them),
// anything but white space after the block, a key that does not parse, or
// a key that [NewJWT] would refuse.
func ParsePublicKeyPEM(data []byte) (crypto.PublicKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("token: no PEM block")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf(`token: PEM block of type %q, want "PUBLIC KEY"`, block.Type)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("token: data after the PEM block")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, errors.New("token: PEM block is not a PKIX public key")
	}
	if err := checkKey(k); err != nil {
		return nil, fmt.Errorf("token: PEM public key: %v", err)
	}
	return k, nil
}

// minRSABits and maxRSABits bound the RSA modulus a [JWT] accepts. A
// verification's cost grows with the square of the size, and is spent
// before a made-up signature is found wrong: crypto/tls refuses keys over
// 8192 bits in certificates for that reason (CVE-2023-29409).
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// checkKey reports whether k is a public key a JWT accepts.
func checkKey(k crypto.PublicKey) error {
	switch k := k.(type) {
	case *rsa.PublicKey:
		if k == nil || k.N == nil {
			return errors.New("nil RSA key")
		}
		if k.N.BitLen() < minRSABits {
			return fmt.Errorf("RSA key of %d bits, under %d", k.N.BitLen(), minRSABits)
		}
		if k.N.BitLen() > maxRSABits {
			return fmt.Errorf("RSA key of %d bits, over %d (each verification would cost too much)", k.N.BitLen(), maxRSABits)
		}
		if k.E < 3 || k.E%2 == 0 || k.E > 1<<31-1 {
			return errors.New("RSA key with an invalid exponent")
		}
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil || k.X == nil || k.Y == nil {
			return errors.New("nil ECDSA key, curve or point")
		}
		if ecAlg(k.Curve) == "" {
			return errors.New("ECDSA key not on P-256, P-384 or P-521")
		}
		if _, err := k.ECDH(); err != nil {
			return errors.New("ECDSA key is not a valid point of its curve")
		}
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return errors.New("Ed25519 key of the wrong size")
		}
		if smallOrder(k) {
			return errors.New("Ed25519 key of small order (a signature anyone can make would verify with it)")
		}
	case nil:
		return errors.New("nil key")
	default:
		return fmt.Errorf("unsupported key type %T (want *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey)", k)
	}
	return nil
}

// smallOrder reports whether k, an Ed25519 public key of the right size,
// encodes a point of order 1, 2, 4 or 8 (the neutral point, all zeros,
// ...), in any encoding crypto/ed25519 decodes (x's sign either way, y
// at or over 2^255-19 as well). crypto/ed25519 does not check the order
// of a public key, and under such a key a signature R || 0, R a point of
// small order, verifies for one message in eight or more: anyone could
// make tokens that verify.
func smallOrder(k ed25519.PublicKey) bool {
	le := slices.Clone(k)
	le[31] &= 0x7f // x's sign
	slices.Reverse(le)
	y := new(big.Int).SetBytes(le)
	y.Mod(y, curve25519P)
	for _, s := range smallOrderY {
		if y.Cmp(s) == 0 {
			return true
		}
	}
	return false
}

// curve25519P is the prime of the field of Ed25519, 2^255-19.
var curve25519P = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))

// smallOrderY are the y coordinates of the eight points of Ed25519 of
// small order (libsodium's blocklist, and "Taming the many EdDSAs",
// list their encodings): 1 (the neutral point), -1 (order 2), 0 (two
// points of order 4), and y8 and -y8 (two points of order 8 each).
var smallOrderY = func() []*big.Int {
	y8, _ := new(big.Int).SetString("05fc536d880238b13933c6d305acdfd5f098eff289f4c345b027b2c28f95e826", 16)
	minus := func(y *big.Int) *big.Int { return new(big.Int).Sub(curve25519P, y) }
	return []*big.Int{big.NewInt(1), minus(big.NewInt(1)), big.NewInt(0), y8, minus(y8)}
}()

// ecAlg returns the JWS algorithm of an ECDSA curve, or "".
func ecAlg(c elliptic.Curve) string {
	switch c {
	case elliptic.P256():
		return "ES256"
	case elliptic.P384():
		return "ES384"
	case elliptic.P521():
		return "ES512"
	}
	return ""
}

// keyAlgs returns the JWS algorithms that may be verified with k, a key
// that passed checkKey.
func keyAlgs(k crypto.PublicKey) []string {
	switch k := k.(type) {
	case *rsa.PublicKey:
		return []string{"PS256", "PS384", "PS512", "RS256", "RS384", "RS512"}
	case *ecdsa.PublicKey:
		return []string{ecAlg(k.Curve)}
	case ed25519.PublicKey:
		return []string{algEd25519, "EdDSA"}
	}
	return nil
}
