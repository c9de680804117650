// Package cliarg shows a command-line argument in a usage error without
// showing a secret it may hold. The example binaries name with it a stray
// argument (one whose flag was forgotten, or an assignment put after the
// command), an unknown command, and a flag's value they refuse (a URL with
// its password put into the wrong flag); they parse their flags with
// [Parse], which shows so what the flag package's own errors quote.
package cliarg

import (
	"net"
	"strconv"
	"strings"
)

// secretHints are the parts, in lower case, of an argument that may hold a
// secret: a URL (user information, a password or token in its query), user
// information without a scheme, and an assignment or word that names one
// (MCP_GATEWAY_SIGN_KEY=..., SHOP_MCP_REDIS_PASSWORD=..., --token=...,
// Bearer ...).
var secretHints = []string{"://", "@", "password", "passwd", "secret", "token", "key", "auth", "bearer"}

// maxShown is the longest argument shown, in bytes: a mistyped command or
// a plain value is short, and a longer one is more likely data or a secret.
const maxShown = 64

// hidden is what Shown returns for an argument that may hold a secret.
const hidden = "(a value that may hold a secret, not shown)"

// Shown quotes v for an error, or names it without showing it when it may
// hold a secret: when it has a part of secretHints (in any case), looks
// like a secret given bare (see looksLikeSecret), or is longer than 64
// bytes. A value shown is quoted with strconv.Quote, so that no control
// character reaches a terminal.
func Shown(v string) string {
	if len(v) > maxShown {
		return "(a value of " + strconv.Itoa(len(v)) + " bytes, not shown)"
	}
	l := strings.ToLower(v)
	for _, s := range secretHints {
		if strings.Contains(l, s) {
			return hidden
		}
	}
	if looksLikeSecret(v) {
		return hidden
	}
	return strconv.Quote(v)
}

// looksLikeSecret reports whether v has the form of a secret given without
// its name: a JWT ("eyJ", a JSON object's start in base64), user:password
// (a colon followed by something other than a port number), or a run of at
// least 16 letters, digits, '_', '+', '=' or '-' that mixes letters and
// digits, or upper and lower case (a hex or base64 key, a bearer token, a
// session id). A mistyped command, a flag, a path, host:port are not so.
func looksLikeSecret(v string) bool {
	if strings.Contains(v, "eyJ") {
		return true
	}
	if i := strings.LastIndexByte(v, ':'); i >= 0 && strings.Trim(v[i+1:], "0123456789") != "" {
		return true
	}
	return keyRun(v)
}

// keyRun reports whether v has a run of at least 16 letters, digits, '_',
// '+', '=' or '-' that mixes letters and digits, or upper and lower case:
// a hex or base64 key, a bearer token, a session id.
func keyRun(v string) bool { return keyRunOf(v, true) }

// keyRunOf is keyRun, with '-' and '_' in a run only when sep is set.
func keyRunOf(v string, sep bool) bool {
	run, digit, letter, upper, lower := 0, false, false, false, false
	for i := 0; i <= len(v); i++ {
		var c byte
		if i < len(v) {
			c = v[i]
		}
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z':
			letter, lower = true, true
		case c >= 'A' && c <= 'Z':
			letter, upper = true, true
		case c == '+' || c == '=' || (c == '_' || c == '-') && sep:
		default:
			if run >= 16 && (digit && letter || upper && lower) {
				return true
			}
			run, digit, letter, upper, lower = 0, false, false, false, false
			continue
		}
		run++
	}
	return false
}

// List shows args as [Shown] does each, in brackets, space-separated.
func List(args []string) string {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = Shown(a)
	}
	return "[" + strings.Join(shown, " ") + "]"
}

// URLMayHoldSecret reports whether v, a URL or a comma-separated list of
// them, may hold a secret: whether it has '@', '?' or '#' (user
// information, a query, a fragment), an entry without a scheme that may be
// a secret (a token or user:password put in the wrong flag: see
// bareSecret), or an entry with one that may hold a secret after "://"
// (see afterScheme). A binary then shows it without those parts, or as
// [ShownURL] does, and does not quote a library's message about it, which
// would.
func URLMayHoldSecret(v string) bool {
	if strings.ContainsAny(v, "@?#") {
		return true
	}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if _, rest, ok := strings.Cut(e, "://"); ok {
			if afterScheme(rest) {
				return true
			}
		} else if bareSecret(e) {
			return true
		}
	}
	return false
}

// afterScheme reports whether rest, what follows "://" in a URL flag's
// entry, may hold a secret: a JWT; a key-like run, not counting '-' and
// '_' (see keyRunOf), in its host when the host has no dot (a token put
// where the host belongs; a name such as my-service-01234.svc.cluster.local
// or mcp-server-01234 is none) or in what follows the host (a webhook's
// token in the path; mcp-server-v2-production is none); or a port that is
// neither a number nor "*" (https://user:password, the host left out). The
// host is an IPv6 address in brackets, or the leading run of letters,
// digits, '.', '-', '_', '+' and '=' (a token's characters too).
func afterScheme(rest string) bool {
	if strings.Contains(rest, "eyJ") {
		return true
	}
	n := 0
	if strings.HasPrefix(rest, "[") { // an IPv6 address
		n = strings.IndexByte(rest, ']') + 1
	} else {
		for n < len(rest) && (isAlnum(rest[n]) || strings.IndexByte(".-_+=", rest[n]) >= 0) {
			n++
		}
	}
	host, tail := rest[:n], rest[n:]
	if !strings.Contains(host, ".") && keyRunOf(host, false) {
		return true
	}
	if p, ok := strings.CutPrefix(tail, ":"); ok {
		p, _, _ = strings.Cut(p, "/")
		if p != "*" && strings.Trim(p, "0123456789") != "" {
			return true
		}
	}
	return keyRunOf(tail, false)
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// bareSecret reports whether e, an entry of a URL flag without "://", may
// be a secret: a JWT; a key-like run (see keyRun; not counting '-' and '_'
// when e has a dot, a host name such as my-service-01234.svc.cluster.local
// being none); or user:password: a colon followed, up to the next ':' or
// '/', by something other than a port number or "*" (host:port/path,
// host:*, http:/host:port and an IP address are not one; http:/user:pw is).
func bareSecret(e string) bool {
	if strings.Contains(e, "eyJ") || keyRunOf(e, !strings.Contains(e, ".")) {
		return true
	}
	if strings.HasPrefix(e, "[") { // an IPv6 address
		if i := strings.IndexByte(e, ']'); i >= 0 {
			e = e[i+1:]
		}
	}
	host, _, _ := strings.Cut(e, "/")
	if ip, _, _ := strings.Cut(host, "%"); net.ParseIP(ip) != nil {
		return false
	}
	for i := strings.IndexByte(e, ':'); i >= 0; {
		e = e[i+1:]
		p := e[:strings.IndexAny(e+":", ":/")]
		if p != "*" && strings.Trim(p, "0123456789") != "" {
			return true
		}
		i = strings.IndexByte(e, ':')
	}
	return false
}

// ShownURL quotes v, a URL or a list of them (an origin, say), for an
// error, unless it may hold a secret ([URLMayHoldSecret]): then it is
// named as [Shown] names a value it hides.
func ShownURL(v string) string {
	if !URLMayHoldSecret(v) {
		return strconv.Quote(v)
	}
	if s := Shown(v); s != strconv.Quote(v) {
		return s
	}
	return hidden
}
