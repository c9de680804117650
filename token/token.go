package token

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/mcpguard/mcpguard/internal/jsondup"
	"github.com/mcpguard/mcpguard/policy"
)

// A Table maps bearer tokens to principals. Lookup compares the SHA-256
// digest of the presented token with the digest of every configured token
// in constant time, without early exit, so timing does not reveal which
// token or prefix was close. A Table is immutable and safe for concurrent
// use; the zero Table holds no tokens.
type Table struct {
	entries []*entry
}

// An entry is a token of a Table. Its digest, which would let a guess be
// checked offline, is behind two pointers, as in hide: fmt, printing the
// fields of a Table value or of a *Table in an unexported field (with
// %s, say: Format is not called there), shows addresses. Printed with a
// verb a pointer does not take, a pointer to a struct is followed once.
type entry struct {
	digest *[sha256.Size]byte
	pr     *policy.Principal
}

// New returns a table of tokens. It returns an error for an empty token, a
// token or subject that cannot travel in an HTTP header, a principal
// without a subject, or an empty or malformed role. The principals are
// copied. Errors never quote a token: they name an entry by its place
// among the tokens sorted in byte order ("entry 1" is the first).
func New(tokens map[string]*policy.Principal) (*Table, error) {
	keys := make([]string, 0, len(tokens))
	for k := range tokens {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := &Table{}
	for n, tok := range keys {
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("token: entry %d: %v", n+1, err)
		}
		pr := tokens[tok]
		if pr == nil || pr.Subject == "" {
			return nil, fmt.Errorf("token: entry %d: principal without a subject", n+1)
		}
		cp := &policy.Principal{Subject: pr.Subject, Roles: slices.Clone(pr.Roles)}
		if pr.Attrs != nil {
			cp.Attrs = make(map[string]string, len(pr.Attrs))
			for k, v := range pr.Attrs {
				cp.Attrs[k] = v
			}
		}
		if err := CheckPrincipal(cp); err != nil {
			return nil, fmt.Errorf("token: entry %d: %v", n+1, err)
		}
		d := sha256.Sum256([]byte(tok))
		t.entries = append(t.entries, &entry{digest: &d, pr: cp})
	}
	return t, nil
}

// Parse parses a token table (see the package documentation). Empty
// tables, empty tokens, entries with neither a subject nor a role, a "sub"
// or "role" written empty or null, a "roles" written null (an empty list
// is no roles), unknown fields, values that cannot travel in an HTTP
// header, and a subject derived from a token (for an entry without "sub")
// that is also another entry's subject are errors; errors never quote a
// token, and name entries as [New] does (by their place among the tokens
// sorted in byte order, not in data). Several entries may name one "sub".
func Parse(data []byte) (*Table, error) {
	if err := duplicateKeys(data); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("token: invalid JSON at offset %d", se.Offset)
		}
		return nil, errors.New("token: must be a JSON object of token to principal")
	}
	if len(raw) == 0 {
		return nil, errors.New("token: no tokens")
	}
	table := make(map[string]*policy.Principal, len(raw))
	toks := make([]string, 0, len(raw))
	for t := range raw {
		toks = append(toks, t)
	}
	sort.Strings(toks)
	derived := make([]bool, len(toks))
	for n, tok := range toks {
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("token: entry %d: %v", n+1, err)
		}
		pr, err := parsePrincipal(raw[tok])
		if err != nil {
			return nil, fmt.Errorf("token: entry %d: %v", n+1, err)
		}
		if pr.Subject == "" {
			if len(pr.Roles) == 0 {
				return nil, fmt.Errorf("token: entry %d: neither a subject nor a role", n+1)
			}
			d := sha256.Sum256([]byte(tok))
			pr.Subject = fmt.Sprintf("token-%x", d[:4])
			derived[n] = true
		}
		table[tok] = pr
	}
	// A derived subject is 4 bytes of a digest: two tokens may get one,
	// or one may be another entry's "sub". Either would make two callers
	// one principal (one budget, one audit trail, one another's sessions).
	holders := make(map[string][]int, len(toks)) // subject -> its entries
	for n, tok := range toks {
		holders[table[tok].Subject] = append(holders[table[tok].Subject], n)
	}
	for n, tok := range toks {
		if h := holders[table[tok].Subject]; derived[n] && len(h) > 1 {
			m := h[0]
			if m == n {
				m = h[1]
			}
			return nil, fmt.Errorf(`token: entry %d: the subject derived from its token is also entry %d's; give one of them a "sub"`, n+1, m+1)
		}
	}
	return New(table)
}

func parsePrincipal(v json.RawMessage) (*policy.Principal, error) {
	var role string
	if json.Unmarshal(v, &role) == nil {
		return &policy.Principal{Roles: []string{role}}, nil
	}
	var roles []string
	if json.Unmarshal(v, &roles) == nil {
		return &policy.Principal{Roles: roles}, nil
	}
	// "sub", "role" and "roles" are read raw, so that one written null,
	// or "sub" or "role" written empty (a template's unset variable), is
	// refused rather than taken as absent: an empty "sub" would get a
	// subject derived from the token, a null "roles" no roles.
	var obj struct {
		Sub   json.RawMessage `json:"sub"`
		Role  json.RawMessage `json:"role"`
		Roles json.RawMessage `json:"roles"`
	}
	dec := json.NewDecoder(strings.NewReader(string(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		// Name the member at fault when the value is an object.
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf(`unknown member %s: an entry is a role, a list of roles, or {"sub", "role" | "roles"}`, f)
		}
		return nil, errors.New(`value must be a role, a list of roles, or {"sub", "role" | "roles"}`)
	}
	sub, err := tableMember("sub", obj.Sub)
	if err != nil {
		return nil, err
	}
	one, err := tableMember("role", obj.Role)
	if err != nil {
		return nil, err
	}
	// "roles" written null is refused too; [] is no roles, on purpose.
	var list []string
	if obj.Roles != nil {
		if string(obj.Roles) == "null" {
			return nil, errors.New(`"roles" is null: leave it out, or give it a list`)
		}
		if json.Unmarshal(obj.Roles, &list) != nil {
			return nil, errors.New(`"roles" must be a list of strings (one role alone goes in "role")`)
		}
	}
	pr := &policy.Principal{Subject: sub, Roles: list}
	if one != "" {
		pr.Roles = append(pr.Roles, one)
	}
	return pr, nil
}

// tableMember reads an entry's member name, raw as decoded: "" when it is
// absent, an error when it is written empty, null or not a string.
func tableMember(name string, raw json.RawMessage) (string, error) {
	if raw == nil {
		return "", nil
	}
	var s string
	if string(raw) != "null" && json.Unmarshal(raw, &s) != nil {
		if name == "role" {
			return "", errors.New(`"role" must be a string (a list of roles goes in "roles")`)
		}
		return "", fmt.Errorf("%q must be a string", name)
	}
	if s == "" {
		return "", fmt.Errorf("%q is empty: leave it out, or give it a value", name)
	}
	return s, nil
}

func checkToken(tok string) error {
	if !IsToken68(tok) {
		return errors.New("token must be a bearer token (RFC 6750 b64token: letters, digits, -._~+/ and trailing =)")
	}
	return nil
}

// The longest identity a principal may carry in identity headers (see
// [CheckPrincipal]): its subject, and its roles joined with commas (the
// [HeaderRole] value). OpenID Connect's sub has at most 255 characters; a
// provider's list of a user's groups (about 200 ids of 36) fits the second.
const (
	MaxSubjectBytes    = 1024
	MaxRoleHeaderBytes = 16 << 10
)

// CheckPrincipal reports whether pr can travel in identity headers (the
// gateway's X-Mcp-Gateway-Subject and -Role) and be read back as the same
// principal: a non-empty subject of printable ASCII without leading or trailing
// spaces, of at most [MaxSubjectBytes], and roles of printable ASCII
// without commas or spaces, at most [MaxRoleHeaderBytes] once joined with
// commas. A principal from anywhere but a [Table] (a custom authenticator)
// must pass it before its identity is sent on.
func CheckPrincipal(pr *policy.Principal) error {
	switch {
	case pr == nil:
		return errors.New("no principal")
	case pr.Subject == "":
		return errors.New("sub must not be empty")
	}
	if !headerSafe(pr.Subject) {
		return errors.New("sub must be printable ASCII")
	}
	if len(pr.Subject) > MaxSubjectBytes {
		return fmt.Errorf("sub must be at most %d bytes", MaxSubjectBytes)
	}
	// HTTP trims header values: a downstream would see another subject
	// than the one the gateway keys sessions and limits by.
	if strings.TrimSpace(pr.Subject) != pr.Subject {
		return errors.New("sub must not begin or end with spaces")
	}
	n := len(pr.Roles) - 1 // the commas
	for _, r := range pr.Roles {
		if r == "" || !headerSafe(r) || strings.ContainsAny(r, ", ") {
			return errors.New("roles must be non-empty printable ASCII without commas or spaces")
		}
		n += len(r)
	}
	if n > MaxRoleHeaderBytes {
		return fmt.Errorf("roles must be at most %d bytes joined with commas", MaxRoleHeaderBytes)
	}
	return nil
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

// Lookup returns the principal of tok, or nil. The principal must not be
// modified. A nil Table holds no tokens.
func (t *Table) Lookup(tok string) *policy.Principal {
	if t == nil {
		return nil
	}
	d := sha256.Sum256([]byte(tok))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil
	}
	return t.entries[found].pr
}

// Len returns the number of tokens.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Bearer extracts the token of an "Authorization: Bearer <token>" header:
// the scheme is case-insensitive (RFC 7235), the token case-sensitive and a
// single b64token (RFC 6750). It reports false for a missing header,
// another scheme, several Authorization headers, or a malformed token.
func Bearer(h http.Header) (string, bool) {
	vs := h.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(vs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if !IsToken68(tok) {
		return "", false
	}
	return tok, true
}

// IsToken68 reports whether s matches RFC 7235's token68 (RFC 6750's
// b64token): 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func IsToken68(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0 {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// The headers by which the mcpguard gateway tells a downstream server who
// the caller is. The gateway strips any client-supplied header in the
// X-Mcp-Gateway- namespace before setting them.
const (
	HeaderSubject   = "X-Mcp-Gateway-Subject"
	HeaderRole      = "X-Mcp-Gateway-Role" // comma-separated roles
	HeaderRequestID = "X-Mcp-Gateway-Request-Id"
)

// duplicateKeys refuses a table in which an object names a member twice
// (the same token, or "role" twice in an entry): encoding/json would keep
// the last without a word. Malformed JSON is left to the decoding after.
func duplicateKeys(data []byte) error {
	// An entry's members are decoded into a struct, whose field names
	// encoding/json matches case-insensitively (and under Unicode folding:
	// "ſub" is "sub"); tokens, the members of the table itself, are
	// case-sensitive.
	name, depth, found := jsondup.Member(data, func(depth int) bool { return depth > 1 })
	switch {
	case !found:
		return nil
	case depth == 1:
		return errors.New("token: a token is listed twice")
	}
	return fmt.Errorf("token: an entry names %q twice", name)
}

// String describes t without its tokens or their digests.
func (t *Table) String() string { return fmt.Sprintf("token.Table(%d tokens)", t.Len()) }

// Format prints [Table.String] for every verb, so that no digest of a token
// (which would let a guess be checked offline) is ever printed.
func (t *Table) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(t.String())) }
