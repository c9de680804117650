package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/mcpguard/mcpguard/policy"
)

// TokensEnv is the environment variable [TokensFromEnv] reads.
const TokensEnv = "MCP_GATEWAY_TOKENS"

// ErrUnknownToken is returned by [TokenStore.Authenticate] for a token that
// is not configured.
var ErrUnknownToken = errors.New("gateway: unknown token")

// An Authenticator turns a bearer token into the principal it stands for. It
// returns a non-nil error for a token it does not accept; the gateway then
// answers 401 without saying why. Implementations are safe for concurrent use
// and must not log the token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*policy.Principal, error)
}

// AuthenticatorFunc adapts a function to an [Authenticator].
type AuthenticatorFunc func(ctx context.Context, token string) (*policy.Principal, error)

// Authenticate calls f(ctx, token).
func (f AuthenticatorFunc) Authenticate(ctx context.Context, token string) (*policy.Principal, error) {
	return f(ctx, token)
}

// A TokenStore is a static table of bearer tokens. Lookup compares the
// SHA-256 digest of the presented token with the digest of every configured
// token in constant time, without early exit, so timing does not reveal
// which token or prefix was close. It is immutable and safe for concurrent
// use.
type TokenStore struct {
	entries []tokenEntry
}

type tokenEntry struct {
	digest [sha256.Size]byte
	pr     *policy.Principal
}

// Authenticate implements [Authenticator]. It returns [ErrUnknownToken] for a
// token that is not configured. The returned principal must not be modified.
func (s *TokenStore) Authenticate(_ context.Context, token string) (*policy.Principal, error) {
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range s.entries {
		if subtle.ConstantTimeCompare(d[:], s.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, ErrUnknownToken
	}
	return s.entries[found].pr, nil
}

// Len returns the number of configured tokens.
func (s *TokenStore) Len() int { return len(s.entries) }

// ParseTokens parses a token table. The JSON is an object from token to one
// of: a role ("tok": "admin"), a list of roles ("tok": ["a", "b"]), or an
// object with "sub" and "role" or "roles" ("tok": {"sub": "svc-etl",
// "role": "admin"}). A token without "sub" gets a subject derived from a
// digest of the token, never the token itself. Empty tokens, empty roles,
// unknown fields and values that cannot travel in an HTTP header are errors;
// the error never quotes a token.
func ParseTokens(data []byte) (*TokenStore, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("gateway: %s: invalid JSON at offset %d", TokensEnv, se.Offset)
		}
		return nil, fmt.Errorf("gateway: %s: must be a JSON object of token to principal", TokensEnv)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("gateway: %s: no tokens", TokensEnv)
	}
	toks := make([]string, 0, len(raw))
	for t := range raw {
		toks = append(toks, t)
	}
	sort.Strings(toks)
	s := &TokenStore{}
	for n, tok := range toks {
		where := fmt.Sprintf("gateway: %s: entry %d", TokensEnv, n+1)
		if strings.TrimSpace(tok) == "" || !headerSafe(tok) || strings.ContainsAny(tok, " \t") {
			return nil, fmt.Errorf("%s: token must be non-empty printable ASCII without spaces", where)
		}
		pr, err := parsePrincipal(raw[tok])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		if pr.Subject == "" {
			d := sha256.Sum256([]byte(tok))
			pr.Subject = fmt.Sprintf("token-%x", d[:4])
		}
		s.entries = append(s.entries, tokenEntry{digest: sha256.Sum256([]byte(tok)), pr: pr})
	}
	return s, nil
}

func parsePrincipal(v json.RawMessage) (*policy.Principal, error) {
	var role string
	if json.Unmarshal(v, &role) == nil {
		return checkPrincipal(&policy.Principal{Roles: []string{role}})
	}
	var roles []string
	if json.Unmarshal(v, &roles) == nil {
		return checkPrincipal(&policy.Principal{Roles: roles})
	}
	var obj struct {
		Sub   string   `json:"sub"`
		Role  string   `json:"role"`
		Roles []string `json:"roles"`
	}
	dec := json.NewDecoder(strings.NewReader(string(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return nil, errors.New(`value must be a role, a list of roles, or {"sub", "role" | "roles"}`)
	}
	pr := &policy.Principal{Subject: obj.Sub, Roles: slices.Clone(obj.Roles)}
	if obj.Role != "" {
		pr.Roles = append(pr.Roles, obj.Role)
	}
	if !headerSafe(obj.Sub) {
		return nil, errors.New("sub must be printable ASCII")
	}
	return checkPrincipal(pr)
}

func checkPrincipal(pr *policy.Principal) (*policy.Principal, error) {
	if len(pr.Roles) == 0 {
		return nil, errors.New("no role")
	}
	for _, r := range pr.Roles {
		if r == "" || !headerSafe(r) || strings.ContainsAny(r, ", ") {
			return nil, errors.New("roles must be non-empty printable ASCII without commas or spaces")
		}
	}
	return pr, nil
}

// headerSafe reports whether s can be sent as an HTTP header value verbatim.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// DemoTokens returns the seed's demonstration table: admin-token is subject
// "admin" with role admin, viewer-token is subject "viewer" with role viewer.
// For local trials only.
func DemoTokens() *TokenStore {
	return &TokenStore{entries: []tokenEntry{
		{digest: sha256.Sum256([]byte("admin-token")), pr: &policy.Principal{Subject: "admin", Roles: []string{"admin"}}},
		{digest: sha256.Sum256([]byte("viewer-token")), pr: &policy.Principal{Subject: "viewer", Roles: []string{"viewer"}}},
	}}
}

// TokensFromEnv reads the token table from the environment variable
// [TokensEnv] (see [ParseTokens]). When the variable is unset it returns
// [DemoTokens] and logs a warning on logger (nil means slog.Default()); when
// it is set but invalid it returns an error, so a bad deployment fails to
// start rather than falling back to known tokens.
func TokensFromEnv(logger *slog.Logger) (*TokenStore, error) {
	v, ok := os.LookupEnv(TokensEnv)
	if !ok {
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("MCP_GATEWAY_TOKENS is unset: using the built-in demo tokens admin-token and viewer-token; do not use this in production")
		return DemoTokens(), nil
	}
	return ParseTokens([]byte(v))
}
