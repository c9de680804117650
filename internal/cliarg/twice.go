package cliarg

import (
	"flag"
	"strings"
)

// Twice returns the name of the first flag of fs that args, which fs
// parsed without error, give more than once, or "" when none is: the flag
// package keeps the last value, so in a script or template a second
// --rate or --audit replaces the first without a word. -name, --name,
// -name=value and --name=value are the same flag; the flags end where
// fs.Parse stopped (at "--" or the first argument that is not a flag).
func Twice(fs *flag.FlagSet, args []string) string {
	seen := make(map[string]bool)
	for len(args) > 0 {
		s := args[0]
		if len(s) < 2 || s[0] != '-' || s == "--" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(s[1:], "-"), "=")
		args = args[1:]
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) && len(args) > 0 {
			args = args[1:] // the flag's value
		}
		if seen[name] {
			return name
		}
		seen[name] = true
	}
	return ""
}

// isBoolFlag reports whether f takes no value unless given one with "="
// (the flag package's boolFlag).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
