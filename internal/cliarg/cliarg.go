// Package cliarg shows a command-line argument in a usage error without
// showing a secret it may hold. The example binaries name a stray argument
// (one whose flag was forgotten, or an assignment put after the command)
// and an unknown command with it.
package cliarg

import (
	"strconv"
	"strings"
)

// secretHints are the parts, in lower case, of an argument that may hold a
// secret: a URL (user information, a password or token in its query), user
// information without a scheme, and an assignment or word that names one
// (MCP_GATEWAY_SIGN_KEY=..., SHOP_MCP_REDIS_PASSWORD=..., --token=...).
var secretHints = []string{"://", "@", "password", "passwd", "secret", "token", "key", "auth"}

// Shown quotes v for an error, or names it without showing it when it may
// hold a secret (see secretHints). A value shown is quoted with
// strconv.Quote, so that no control character reaches a terminal.
func Shown(v string) string {
	l := strings.ToLower(v)
	for _, s := range secretHints {
		if strings.Contains(l, s) {
			return "(a value that may hold a secret, not shown)"
		}
	}
	return strconv.Quote(v)
}

// List shows args as [Shown] does each, in brackets, space-separated.
func List(args []string) string {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = Shown(a)
	}
	return "[" + strings.Join(shown, " ") + "]"
}
