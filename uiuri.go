package mcpguard

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/mcpguard/mcpguard/policy"
)

// The go-sdk finds a resource by its exact URI, but a resource template by
// a pattern that admits percent-escapes, and a template's handler may read
// the URI it is given leniently: decoded (as uritemplate.Match decodes
// it, or until nothing is left to decode), case folded, its query and
// fragment ignored, its host read by net/url, its path cleaned. So
// "ui://tpl/%61dmin", "ui://tpl/ADMIN?v=2", "ui://x@tpl:1/admin" or
// "ui://tpl/x/../admin" may serve the UI resource "ui://tpl/admin". The guard hides, besides a UI
// resource's own URI, every URI that means it under such a reading (see
// uriKey), unless the URI is itself one the caller may see.

// uriKey returns the key under which the guard takes two URIs to name the
// same resource: the URI without its query and fragment, its
// percent-escapes decoded until none are left (as a handler that decodes
// until the URI stops changing would), backslashes read as slashes,
// letters folded (so that strings.ToLower, strings.ToUpper and
// strings.EqualFold take none of its spellings for another: "ſ" is "s",
// "ı" is "i"), the part after the scheme cleaned as a path (dot segments,
// repeated and trailing slashes), and, when it has one ("scheme://host"),
// its host read as net/url's Hostname reads it (without userinfo or port)
// and as DNS does (without trailing dots). It errs towards taking URIs for
// the same: a key only ever hides. Its cost is linear in the URI's length.
func uriKey(uri string) string {
	s := uri
	for range 8 { // a round that decodes nothing ends it: two or three do
		before := s
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i]
		}
		s = unescapeAll(strings.TrimSpace(s))
		if s == before {
			break
		}
	}
	s = strings.Map(foldRune, strings.ReplaceAll(s, `\`, "/"))
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return path.Clean("/" + s)
	}
	authority := strings.HasPrefix(rest, "//")
	rest = strings.TrimPrefix(path.Clean("/"+rest), "/")
	if !authority {
		return scheme + "://" + rest
	}
	host, tail, slash := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.Trim(host[i+1:], "0123456789") == "" {
		host = host[:i]
	}
	host = strings.TrimRight(host, ".")
	if slash {
		host += "/" + tail
	}
	return scheme + "://" + host
}

// foldRune maps the letters that Unicode case folding, ToLower or ToUpper
// take for one another to one of them.
func foldRune(r rune) rune {
	r = unicode.ToLower(unicode.ToUpper(r))
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return unicode.ToLower(least)
}

// unhex returns the value of the hexadecimal digit c, and whether it is
// one.
func unhex(c byte) (byte, bool) {
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

// unescapeAll decodes the percent-escapes of s until none are left: an
// escape that decoding forms (as "%2561" forms "%61") is decoded too, in
// one pass. The rest of s is kept as it is.
func unescapeAll(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	// b never holds an escape: each byte added may complete one, at its
	// end, which is decoded at once (and may complete another).
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		b = append(b, s[i])
		for n := len(b); n >= 3 && b[n-3] == '%'; n = len(b) {
			hi, ok1 := unhex(b[n-2])
			lo, ok2 := unhex(b[n-1])
			if !ok1 || !ok2 {
				break
			}
			b = append(b[:n-3], hi<<4|lo)
		}
	}
	return string(b)
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
// (tools/list would show it), under the policy now.
func (g *Guard) sight(pr *policy.Principal, links []*toolEntry) *uiSight {
	return g.sightBy(g.pol.Load(), pr, links)
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
