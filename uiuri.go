package mcpguard

import (
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/mcpguard/mcpguard/policy"
)

// The go-sdk finds a resource by its exact URI, but a resource template by
// a pattern that admits percent-escapes, and a template's handler may read
// the URI it is given leniently: decoded (as uritemplate.Match decodes
// it), case folded, its query and fragment ignored, its path cleaned. So
// "ui://tpl/%61dmin", "ui://tpl/ADMIN?v=2" or "ui://tpl/x/../admin" may
// serve the UI resource "ui://tpl/admin". The guard hides, besides a UI
// resource's own URI, every URI that means it under such a reading (see
// uriKey), unless the URI is itself one the caller may see.

// uriKey returns the key under which the guard takes two URIs to name the
// same resource: the URI without its query and fragment, its
// percent-escapes decoded (repeatedly, as long as that changes it, up to
// eight times), backslashes read as slashes, lower-cased, and the part
// after the scheme cleaned as a path (dot segments, repeated and trailing
// slashes). It errs towards taking URIs for the same: a key only ever
// hides.
func uriKey(uri string) string {
	s := uri
	for range 8 {
		before := s
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i]
		}
		s = unescapeAll(strings.TrimSpace(s))
		if s == before {
			break
		}
	}
	s = strings.ToLower(strings.ReplaceAll(s, `\`, "/"))
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return path.Clean("/" + s)
	}
	return scheme + "://" + strings.TrimPrefix(path.Clean("/"+rest), "/")
}

// unescapeAll decodes every well-formed percent-escape of s and keeps the
// rest as it is.
func unescapeAll(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	unhex := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10, true
		case 'A' <= c && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b.WriteByte(hi<<4 | lo)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// A uiSight is what one caller may see of the UI resources that the
// server's tools name.
type uiSight struct {
	seen   map[string]bool // named by a tool the caller may see
	hidden map[string]bool // named by tools it may not see only
	keys   map[string]bool // the uriKey of each hidden one
}

// hides reports whether uri is hidden from the caller: it is a hidden UI
// resource, or means one (their uriKeys are equal) and is not itself one
// the caller may see.
func (s *uiSight) hides(uri string) bool {
	if s.hidden[uri] {
		return true
	}
	if len(s.keys) == 0 || s.seen[uri] {
		return false
	}
	return s.keys[uriKey(uri)]
}

// signature names the sight: two callers with the same signature are
// shown the same resources.
func (s *uiSight) signature() string {
	hidden := make([]string, 0, len(s.hidden))
	for u := range s.hidden {
		hidden = append(hidden, u)
	}
	seen := make([]string, 0, len(s.seen))
	for u := range s.seen {
		seen = append(seen, u)
	}
	slices.Sort(hidden)
	slices.Sort(seen)
	raw, _ := json.Marshal([2][]string{hidden, seen}) // strings and slices of them always marshal
	return string(raw)
}

// sight returns what pr may see of the UI resources of links: a UI
// resource is pr's if one of the tools that name it is one pr may see
// (tools/list would show it).
func (g *Guard) sight(pr *policy.Principal, links []*toolEntry) *uiSight {
	s := &uiSight{seen: map[string]bool{}, hidden: map[string]bool{}, keys: map[string]bool{}}
	for _, e := range links {
		if e.err == nil && g.pol.Visible(pr, e.tool.Name) {
			for _, u := range e.ui {
				s.seen[u] = true
			}
		}
	}
	for _, e := range links {
		for _, u := range e.ui {
			if !s.seen[u] && !s.hidden[u] {
				s.hidden[u] = true
				s.keys[uriKey(u)] = true
			}
		}
	}
	return s
}

// namedUI reports whether uri is, or means (see uriKey), a UI resource
// that one of links names.
func namedUI(links []*toolEntry, uri string) bool {
	key := ""
	for _, e := range links {
		for _, u := range e.ui {
			if u == uri {
				return true
			}
			if key == "" {
				key = uriKey(uri)
			}
			if uriKey(u) == key {
				return true
			}
		}
	}
	return false
}
