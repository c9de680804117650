// Package token holds bearer-token verification: static token tables (the
// parsing of a token table from JSON, constant-time lookup), signed JWTs,
// token introspection, and RFC 6750 bearer extraction. The root package's
// authenticators, the gateway and the example servers share it, so the one
// piece of code that checks credentials exists once.
//
// A token table is a JSON object from token to one of:
//
//	"tok-1": "admin"                               a role
//	"tok-2": ["support", "billing"]                a list of roles
//	"tok-3": {"sub": "svc-etl", "role": "admin"}   a subject and a role
//	"tok-4": {"sub": "ann", "roles": ["a", "b"]}   a subject and roles
//
// A token without "sub" gets a subject derived from a digest of the token,
// never the token itself; a table in which that subject is also another
// entry's is refused, so that two tokens are never one principal by
// accident. A "sub" or "role" written empty or null, or a "roles" written
// null (a template's unset variable), is refused, not read as left out.
//
// Over stateful Streamable HTTP, [Table.BindSessions] wraps the go-sdk's
// handler so that each MCP session belongs to the principal that opened it;
// [BindSessions] does so for the tokens any TokenVerifier accepts (a
// JWT's, an Introspector's), which judges their expiry: BindSessions lets
// the go-sdk refuse only a TokenInfo that expired more than [MaxLeeway]
// ago, for a verifier's leeway.
//
// # JWTs
//
// A [JWT] verifies signed bearer JWTs (RFC 7519) from one issuer for one
// audience: asymmetric algorithms only (RS*, PS*, ES*, Ed25519 and its
// deprecated name EdDSA; never "none" or HMAC), each matched to the type
// of the key the token's "kid" selects, and to the key's one algorithm
// when it has one (an [AlgKey]: a JWK with "alg", RFC 8725 section 3.1);
// "exp" required; "nbf" and "iat" checked; "iss" and "aud" exact; the
// header and the claims UTF-8, with no member named twice (nor two
// claims named alike under case folding, "sub" and "SUB", which a Go
// struct reads as one). The subject is "sub", the roles a configurable
// claim (an array of strings or a space-separated string; a dotted name
// such as "realm_access.roles" reaches into nested objects, splitting at
// every dot but one written `\.`, which is part of a name), and the
// principal's Attrs the string claims [JWTConfig.AttrClaims] names (a
// tenant, a team), read alike.
// A header "typ", when present, must be "JWT" or "at+jwt" (RFC 9068
// access tokens; configurable), in any letter case and with or without an
// "application/" prefix, so that another kind
// of JWT from the same issuer, such as a DPoP proof or a logout token, is
// not taken for an access token. [ParseJWKS] loads an issuer's JWK Set and
// [ParsePublicKeyPEM] a single PKIX public key, for fixed keys; a
// [RemoteKeySet] fetches the JWK Set from the issuer's "jwks_uri", caches
// it, and fetches it again when a token names a new key, or has no kid
// and no key of the set verifies it (at most once a minute by default),
// or when it is an hour old, keeping the last good set when a fetch fails;
// a response's Cache-Control max-age (less its Age header), no-store or
// no-cache shortens the hour, never below that minimum. [DiscoverKeySet]
// finds the jwks_uri in the issuer's metadata (its OpenID Connect
// discovery document, or its RFC 8414 authorization server metadata),
// whose "issuer" must be the issuer exactly, and reads it again when the
// set cannot be fetched or lacks a token's kid after a refresh (as rarely
// as the set itself is fetched), so that a provider that moves its
// jwks_uri is followed. [JWT.Verifier] plugs a JWT into the go-sdk's
// auth.RequireBearerToken (the Attrs travel in the TokenInfo's Extra under
// [ExtraAttrs], where mcpguard.FromTokenInfo reads them), and a *JWT is
// itself a gateway.Authenticator.
// Refusals unwrap to [ErrInvalidJWT] and never quote the token; a token
// whose kid a RemoteKeySet lacks while its last fetch failed is not judged
// (the key may be a new one the set could not fetch), an error that
// unwraps to [ErrKeySetUnavailable], not ErrInvalidJWT. The jwt
// package (github.com/golang-jwt/jwt/v5) has no "Ed25519" method: [NewJWT]
// registers one with it, for the whole process, which verifies what
// "EdDSA" verifies, with an Ed25519 key only.
//
// # Introspection
//
// An [Introspector] verifies tokens that the server cannot read itself,
// such as the opaque access tokens of many identity providers, by asking
// the authorization server's token introspection endpoint (RFC 7662),
// authenticated with the client's credentials (HTTP Basic), and reads the
// answer as a JWT's claims are read: "active" must be true, "aud" must
// hold the audience, "iss" must be the issuer when one is configured,
// "exp" and "nbf" are checked, the subject is "sub", the roles
// "scope" (or a configured member) and the Attrs the members
// [IntrospectionConfig.AttrClaims] names. Answers are cached under the token's
// digest (acceptances for a minute, never past "exp"; refusals for 10
// seconds), concurrent lookups of one token share one request, and at
// most 64 requests are under way at once (MaxInFlight). It
// plugs in where a JWT does: [Introspector.Verifier] for the go-sdk, the
// *Introspector itself as a gateway.Authenticator. Refusals unwrap to
// [ErrInvalidToken]; an endpoint that cannot answer, which judged nothing,
// to [ErrIntrospectionFailed]. Neither quotes the token, the client's
// secret or the answer.
//
// # Signed gateway identity
//
// The gateway tells a downstream who the caller is in [HeaderSubject],
// [HeaderRole] and [HeaderRequestID]. With a [GatewaySigner] (the gateway's
// Options.Signer) it also signs them, with the request and the session it
// runs in (Mcp-Session-Id: the gateway lets a principal use only its own), in
// [HeaderSignature], and a downstream that wraps its handler in
// [GatewaySigner.Verify] (with the same key) accepts only requests the
// gateway sent, once each. The header is
//
//	X-Mcp-Gateway-Signature: t=<unix seconds>,n=<32 hex digits>,v1=<64 hex digits>
//
// where n is a nonce, unique per request, and v1 is the lowercase hex of
// HMAC-SHA256(key, message). The message is these ten fields in order,
// each as its length in bytes (4 bytes, big-endian) followed by its bytes:
// the string "mcpguard-gateway-signature-v1"; t, as written in the header;
// n, as written; the HTTP method; the request target as sent (the path and
// query of the request line, not decoded); the values of the subject, role,
// request id and Mcp-Session-Id headers (empty when absent); and the 32-byte
// SHA-256 of the exact body bytes (of no bytes for a request without a
// body). A verifier in another language refuses a request unless: the
// header is present once, in that format, with t within its allowed skew of
// its clock (60 s); each identity header and Mcp-Session-Id is present at
// most once; no other header is in the X-Mcp-Gateway- namespace, and no
// header names one of these or Mcp-Session-Id with "_" for "-" (a WSGI or
// CGI server reads X_Mcp_Gateway_Subject as the subject header); the MAC
// under one of its keys equals v1 (compared in constant time); it has
// not accepted that MAC before (remembered until t plus the skew); and t is
// not before the second the verifier started (a run before a restart may
// have accepted it: its memory is gone). The signature names no
// downstream: a request signed for one is accepted by another holding the
// same key, so each downstream has a key of its own. In
// Python:
//
//	def f(b): return struct.pack(">I", len(b)) + b
//	msg = b"".join(map(f, [b"mcpguard-gateway-signature-v1", t, n, method,
//	    target, subject, role, request_id, session_id,
//	    hashlib.sha256(body).digest()]))
//	ok = hmac.compare_digest(hmac.new(key, msg, hashlib.sha256).hexdigest(), v1)
//
// Test vector: the key 32 bytes of 0x0b; t 1767225600; n
// "00112233445566770000000000000001"; POST "/mcp?x=1"; subject "ann", role
// "support,billing", request id "0193a1b2c3d4-5e6f708192a3", session id
// "a1b2c3d4e5f6"; the body {"jsonrpc":"2.0","id":1,"method":"tools/list"};
// v1 is 8102938af10bd1d1e77e5dafb0057b82ea159c49627232e508699e94cd5b6549.
//
// The nonce, not the request id, makes each signature unique: the members
// of a batch are sent as requests of their own that share the batch's
// request id (the correlation id of its audit records).
package token
