package cliarg

import (
	"strconv"
	"testing"
)

// TestReview38ShownAtTheEdges pins Shown where a secret's form begins and
// ends: a 16-character key at the very start of the argument, keys holding
// the characters at the ends of the letter and digit ranges ('9', 'z',
// 'Z') and base64's '+' and '=', lower-case hex, letters of both cases
// without digits, a password after a leading colon. Each is hidden; a
// miss prints a secret in a usage error, on a terminal or in a CI log.
// And what is no secret stays shown: 16 or more lower-case letters
// (a mistyped command), a digit-and-letter run of 15, a run that mixes
// only with a run before it, a value of exactly 64 bytes.
func TestReview38ShownAtTheEdges(t *testing.T) {
	for _, v := range []string{
		"Ab3dEf7hIj1lMn0p",         // 16 at the start
		"Q1w2E3r4zT5y6U7i",         // a 'z' inside
		"a9b8c7d6e5f4g3h2",         // '9' inside
		"aBcDeFgHiJkLmNoZ",         // 'Z' inside, cases mixed, no digit
		"AbCdEfGhIjKlMnOpQ",        // cases mixed, no digit
		"3f9a0b7c1d2e4f5a6b",       // lower-case hex
		"aB+cD+eF+gH+iJ+kL",        // base64 with '+'
		"aB=cD=eF=gH=iJ=kL",        // and '='
		"x aB3dE9fG7hZiJ1kL",       // after a separator
		":hunter2",                 // a password after a leading colon
		"mcp-7f3a9b2c1d4e5f6a7b8c", // a session id
	} {
		if got := Shown(v); got != hidden {
			t.Errorf("Shown(%q) = %s, want it hidden", v, got)
		}
	}
	for _, v := range []string{
		"abcdefghijklmnopqrstuvwxyz", // letters of one case only
		"ABCDEFGHIJKLMNOPQ",
		"0123456789012345678",      // digits only
		"Ab3dEf7hIj1lMn0",          // 15
		"a1 bcdefghijklmnopqrstu",  // the mix is in the run before
		"AB cdefghijklmnopqrst",    // cases in two runs
		"Ab3dEf7 hIj1lMn0p",        // two runs of less than 16
		"x Ab3dEf7hIj1lMn0",        // 15 after a separator
		"x 01234567890123456",      // digits only after a separator
		"x ABCDEFGHIJKLMNOPQ",      // one case only after a separator
		"--filter-tools-list",      // a flag
		"examples/gateway/main.go", // a path
		"127.0.0.1:8080",           // host:port
		"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl", // 64 bytes
	} {
		if got := Shown(v); got != strconv.Quote(v) {
			t.Errorf("Shown(%q) = %s, want it shown", v, got)
		}
	}
}

// TestReview38URLMayHoldSecretAtTheEdges pins URLMayHoldSecret where a
// secret's form begins and ends: a token in the place of the host, from
// its first character and holding '9' and 'Z'; a password after an IPv6
// address's port colon, with and without a scheme; a bare ":password". A
// miss prints the secret when the binary shows the flag's value.
func TestReview38URLMayHoldSecretAtTheEdges(t *testing.T) {
	for _, v := range []string{
		"https://Ab3dEf7hIj1lMn0p",
		"https://aB3dE9fG7hZiJ1kL",
		"https://aB3dEZfG7h9iJ1kL/mcp",
		"https://aB3dEzfG7h9iJ1kL",
		"https://:hunter2",
		"http://[::1]:hunter2",
		"http://[::1]:hunter2/mcp",
		"[::1]:hunter2",
		"[fe80::1%eth0]:hunter2",
		":hunter2",
		"h:1, :hunter2",
	} {
		if !URLMayHoldSecret(v) {
			t.Errorf("URLMayHoldSecret(%q) = false, want true", v)
		}
	}
	for _, v := range []string{
		"http://[::1]:8080/mcp",
		"[::1]:8080",
		"http://:8080/mcp",
		"http://mcp-server-01234:8080/mcp",
		"https://my-service-01234.svc.cluster.local/mcp",
		"127.0.0.1:6379",
	} {
		if URLMayHoldSecret(v) {
			t.Errorf("URLMayHoldSecret(%q) = true, want false", v)
		}
	}
}

// TestReview38ShownErrorEveryWindow pins that a flag's Set error that
// repeats any four bytes of a hidden value, the first four and the last
// four included, or spells them with escapes, is not shown: the value was
// hidden for a reason, and its error must not print a piece of it.
func TestReview38ShownErrorEveryWindow(t *testing.T) {
	v := "Tok3nAbCdEfGh1jK"
	for _, text := range []string{
		"bad prefix Tok3",
		"bad suffix h1jK",
		`bad prefix "\x54ok3"`,
		`bad prefix "\u0054ok3..."`,
		`\x54\x6f\x6b\x33`,
	} {
		if got := shownError(text, v); got != errNotShown {
			t.Errorf("shownError(%q, %q) = %q, want %q", text, v, got, errNotShown)
		}
	}
	if got, want := shownError("must be a number", v), "must be a number"; got != want {
		t.Errorf("shownError(%q, %q) = %q, want %q", want, v, got, want)
	}
	if got, want := unescaped(`a\x41b\u00e9c\"d`), `aAbéc"d`; got != want {
		t.Errorf("unescaped = %q, want %q", got, want)
	}
}

// TestReview38UnknownFlagHiddenWithItsDashes pins the message of an
// unknown flag whose name looks like a secret only with its dashes (a run
// of 16 with them): the flag package's own words, then the name hidden.
func TestReview38UnknownFlagHiddenWithItsDashes(t *testing.T) {
	name := "abcdefgh1234567"
	if hides(name) || !hides("--"+name) {
		t.Fatalf("the test's name %q must look like a secret only with its dashes", name)
	}
	if got, want := shownMessage(nil, notDefined+name, nil), "flag provided but not defined: "+hidden; got != want {
		t.Errorf("shownMessage(%q) = %q, want %q", notDefined+name, got, want)
	}
}
