package cliarg

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// The flag package's messages (Go 1.26) that quote what the user typed:
// a flag's value, or the argument itself.
const (
	badSyntax  = "bad flag syntax: "                // the argument
	notDefined = "flag provided but not defined: -" // the name, up to '='
	badValue   = "invalid value "                   // %q for flag -name: Set's error
	badBool    = "invalid boolean value "           // %q for -name: Set's error
	needsArg   = "flag needs an argument: -"        // a defined name
	badBoolSet = "invalid boolean flag "            // a defined name: Set("true")'s error
)

// errNotShown replaces the error of a flag's Set that repeats a part of a
// value Shown hides.
const errNotShown = "(its error, which may repeat part of the value, not shown)"

// window is the shortest part, in bytes, of a value Shown hides that
// makes a Set error repeating it not shown.
const window = 4

// Parse parses args with fs as fs.Parse does, flags, -h and -help, error
// handling and fs.Usage included, and prints and returns the same messages
// but with every value or flag name that Shown hides shown as Shown shows
// it: the value of "invalid value" and "invalid boolean value", the name of
// "flag provided but not defined" (what followed the dashes:
// --https://u:pw@h is a name holding a password) and the argument of "bad
// flag syntax". A Set error (a custom flag.Value's) repeating such a value
// has it shown so too, or is not shown when it repeats a part of it (4 bytes
// or more, in any case, as is or in the escapes of a Go string literal).
// What Shown would quote is printed as the flag package prints it, unquoted
// where it does not quote it. In a message of another form (a later Go's),
// every argument, flag name or value in args that Shown hides, and that is
// not a flag of fs, is shown so.
//
// As fs.Parse, it prints the message on fs.Output, then the usage (fs.Usage,
// or the flag package's default usage when nil), and with ExitOnError exits
// with status 2 (0 after -h), with PanicOnError panics with the error. It
// leaves fs's output, usage and error handling as they were (an output set
// to os.Stderr is left as the default, which is os.Stderr).
func Parse(fs *flag.FlagSet, args []string) error {
	printed, usage, err := parseQuiet(fs, args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		if msg := shownMessage(fs, err.Error(), args); msg != err.Error() {
			printed = strings.Replace(printed, err.Error(), msg, 1)
			err = errors.New(msg)
		}
	}
	io.WriteString(fs.Output(), printed)
	if usage {
		fs.Usage()
	}
	if err == nil {
		return nil
	}
	switch fs.ErrorHandling() {
	case flag.ExitOnError:
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	case flag.PanicOnError:
		panic(err)
	}
	return err
}

// parseQuiet runs fs.Parse(args) with ContinueOnError, printing to a buffer
// and with fs.Usage, when set, only noted: it returns what Parse printed (the
// message, then the default usage when fs.Usage is nil), whether it called
// fs.Usage, and its error. It leaves fs as it found it, even when a
// flag's Set panics.
func parseQuiet(fs *flag.FlagSet, args []string) (printed string, usage bool, err error) {
	out, usageFunc, handling := fs.Output(), fs.Usage, fs.ErrorHandling()
	defer func() {
		// Init sets the name and the error handling only.
		fs.Init(fs.Name(), handling)
		if out == os.Stderr {
			out = nil // Output's default, which follows os.Stderr
		}
		fs.SetOutput(out)
		fs.Usage = usageFunc
	}()
	var buf bytes.Buffer
	fs.Init(fs.Name(), flag.ContinueOnError)
	fs.SetOutput(&buf)
	if usageFunc != nil {
		fs.Usage = func() { usage = true }
	}
	err = fs.Parse(args)
	return buf.String(), usage, err
}

// shownMessage is msg, an error of fs.Parse(args), with every value or
// name of the user's that Shown hides shown as Shown shows it.
func shownMessage(fs *flag.FlagSet, msg string, args []string) string {
	switch {
	case strings.HasPrefix(msg, badSyntax):
		if a := msg[len(badSyntax):]; hides(a) {
			return badSyntax + Shown(a)
		}
		return msg
	case strings.HasPrefix(msg, notDefined):
		// The name as typed, with its dashes, may look like a secret
		// where the name alone does not (a run of 16 with them).
		name := msg[len(notDefined):]
		switch {
		case hides(name):
			return notDefined[:len(notDefined)-1] + Shown(name)
		case hides("--" + name):
			return notDefined[:len(notDefined)-1] + hidden
		}
		return msg
	case strings.HasPrefix(msg, needsArg), strings.HasPrefix(msg, badBoolSet):
		return msg // no value of the user's
	}
	for _, prefix := range []string{badValue, badBool} {
		if !strings.HasPrefix(msg, prefix) {
			continue
		}
		rest := msg[len(prefix):]
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			break
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			break
		}
		if !hides(v) {
			return msg
		}
		// rest[len(q):] is " for [flag ]-name: " and Set's error.
		tail := rest[len(q):]
		if i := strings.Index(tail, ": "); i >= 0 {
			return prefix + Shown(v) + tail[:i+2] + shownError(tail[i+2:], v)
		}
		return prefix + Shown(v) + shownError(tail, v)
	}
	return shownAny(fs, msg, args)
}

// hides reports whether Shown hides v.
func hides(v string) bool { return Shown(v) != strconv.Quote(v) }

// shownError is text, the error of a flag's Set for v, a value Shown
// hides, with v (whole, or quoted) shown as Shown shows it, or errNotShown
// when what is left repeats a part of v, as is or escaped (see unescaped).
// The flag package's own errors of its numbers, booleans and durations do
// not repeat it: they are shown.
func shownError(text, v string) string {
	if text == "parse error" || text == "value out of range" {
		return text
	}
	pieces := strings.Split(strings.ReplaceAll(text, strconv.Quote(v), v), v)
	lv := strings.ToLower(v)
	for _, p := range pieces {
		for _, lp := range []string{strings.ToLower(p), strings.ToLower(unescaped(p))} {
			for i := 0; i+window <= len(lv); i++ {
				if strings.Contains(lp, lv[i:i+window]) {
					return errNotShown
				}
			}
		}
	}
	return strings.Join(pieces, Shown(v))
}

// unescaped is s with each escape of a Go string literal in it (\x, \u, \U,
// octal, \n, \") replaced by what it stands for: a Set error may quote a
// value otherwise than strconv.Quote (time's errors escape every byte not
// ASCII, %+q every rune), and its escapes spell the value out.
func unescaped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '\\' {
			if r, multibyte, tail, err := strconv.UnquoteChar(s[i:], '"'); err == nil {
				if multibyte {
					b.WriteRune(r)
				} else {
					b.WriteByte(byte(r))
				}
				i = len(s) - len(tail)
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// shownAny is msg, a message of a form the flag package did not have, with
// every argument in args, and every flag name and value in them, that
// Shown hides and that is not a flag of fs, shown as Shown shows it
// (whole or quoted, the longest first).
func shownAny(fs *flag.FlagSet, msg string, args []string) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, a)
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name, v, _ := strings.Cut(strings.TrimPrefix(name, "-"), "=")
			parts = append(parts, name, v)
		}
	}
	type form struct{ text, v string } // v as text shows it
	var hidden []form
	for _, p := range parts {
		if hides(p) && fs.Lookup(p) == nil {
			hidden = append(hidden, form{strconv.Quote(p), p}, form{p, p})
		}
	}
	if len(hidden) == 0 {
		return msg
	}
	sort.SliceStable(hidden, func(i, j int) bool { return len(hidden[i].text) > len(hidden[j].text) })
	var b strings.Builder
next:
	for i := 0; i < len(msg); {
		for _, h := range hidden {
			if strings.HasPrefix(msg[i:], h.text) {
				b.WriteString(Shown(h.v))
				i += len(h.text)
				continue next
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}
