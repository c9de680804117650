package cliarg

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const (
	pwURL    = "postgres://app:s3cret@db/x"
	hiddenLn = "(a value that may hold a secret, not shown)"
)

// urlValue is a custom flag.Value whose Set error repeats the value whole,
// quoted, as url.Parse's errors do.
type urlValue struct{}

func (urlValue) String() string { return "" }
func (urlValue) Set(v string) error {
	return fmt.Errorf("parse %q: want an http URL", v)
}

// partValue is a custom flag.Value whose Set error repeats a part of the
// value (what follows the last ':'), as a port parser's would.
type partValue struct{}

func (partValue) String() string { return "" }
func (partValue) Set(v string) error {
	return fmt.Errorf("bad port %s", v[strings.LastIndexByte(v, ':')+1:])
}

// durValue is a custom flag.Value returning time.ParseDuration's error,
// which quotes the value (as time quotes it: not always as strconv.Quote).
type durValue struct{}

func (durValue) String() string { return "" }
func (durValue) Set(v string) error {
	_, err := time.ParseDuration(v)
	return err
}

// boolValue is a custom boolean flag whose Set error repeats the value.
type boolValue struct{}

func (boolValue) String() string   { return "false" }
func (boolValue) IsBoolFlag() bool { return true }
func (boolValue) Set(v string) error {
	return fmt.Errorf("want true or false, not %s", v)
}

// Usages of newFlagSet.
const (
	nilUsage     = iota // fs.Usage nil: the flag package's default
	defaultUsage        // NewFlagSet's
	customUsage         // "usage line", then the defaults
)

// newFlagSet is a FlagSet with a flag of each kind, writing to out, with
// the usage usage.
func newFlagSet(out *strings.Builder, usage int) *flag.FlagSet {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Int("port", 0, "a port")
	fs.Uint("n", 0, "a count")
	fs.Float64("f", 0, "a number")
	fs.Bool("b", false, "a boolean")
	fs.Duration("d", 0, "a duration")
	fs.String("s", "", "a string")
	fs.Var(urlValue{}, "url", "a URL")
	fs.Var(partValue{}, "part", "a host:port")
	fs.Var(boolValue{}, "cb", "a custom boolean")
	fs.Var(durValue{}, "cd", "a custom duration")
	fs.String("upstream-key", "", "a file name Shown would hide")
	switch usage {
	case nilUsage:
		fs.Usage = nil
	case customUsage:
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), "usage line")
			fs.PrintDefaults()
		}
	}
	return fs
}

// TestReview32ParseHidesSecrets: every message the flag package prints for
// a value or flag name that may hold a secret shows it as Shown does (in
// the quoted value, in the Set error that repeats it, in the name of a flag
// not defined and in a bad flag syntax), on the FlagSet's output, followed
// by its usage, and returns the same text; fs.Parse printed the password.
func TestReview32ParseHidesSecrets(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // the error line
	}{
		{"bad_int", []string{"-port", pwURL}, "invalid value " + hiddenLn + " for flag -port: parse error"},
		{"bad_int_equals", []string{"--port=" + pwURL}, "invalid value " + hiddenLn + " for flag -port: parse error"},
		{"bad_int_value_has_error_words", []string{"-port", "https://u:s3cret@parser.example/error"}, "invalid value " + hiddenLn + " for flag -port: parse error"},
		{"bad_uint", []string{"-n", pwURL}, "invalid value " + hiddenLn + " for flag -n: parse error"},
		{"bad_float64", []string{"-f", pwURL}, "invalid value " + hiddenLn + " for flag -f: parse error"},
		{"bad_bool", []string{"-b=" + pwURL}, "invalid boolean value " + hiddenLn + " for -b: parse error"},
		{"bad_custom_bool", []string{"-cb=" + pwURL}, "invalid boolean value " + hiddenLn + " for -cb: want true or false, not " + hiddenLn},
		{"bad_duration", []string{"-d", pwURL}, "invalid value " + hiddenLn + " for flag -d: parse error"},
		{"custom_duration", []string{"-cd", pwURL}, "invalid value " + hiddenLn + " for flag -cd: time: invalid duration " + hiddenLn},
		{"custom_duration_quoted_otherwise", []string{"-cd", "postgres://app:s3crét@db/x"}, "invalid value " + hiddenLn + " for flag -cd: " + errNotShown},
		{"custom_value_repeats_it", []string{"-url", pwURL}, "invalid value " + hiddenLn + " for flag -url: parse " + hiddenLn + ": want an http URL"},
		{"custom_value_repeats_part", []string{"-part", "u:s3cret@h:s3cret"}, "invalid value " + hiddenLn + " for flag -part: " + errNotShown},
		{"long_value", []string{"-port", strings.Repeat("x", 70) + "s3cret"}, "invalid value (a value of 76 bytes, not shown) for flag -port: parse error"},
		{"not_defined_name", []string{"--https://u:s3cret@h"}, "flag provided but not defined: " + hiddenLn},
		{"not_defined_name_with_value", []string{"-postgres://u:s3cret@h/db=x"}, "flag provided but not defined: " + hiddenLn},
		{"bad_syntax", []string{"--=" + pwURL}, "bad flag syntax: " + hiddenLn},
		{"bad_syntax_three_dashes", []string{"---" + pwURL}, "bad flag syntax: " + hiddenLn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, usage := range []int{nilUsage, defaultUsage, customUsage} {
				var out strings.Builder
				fs := newFlagSet(&out, usage)
				err := Parse(fs, tc.args)
				if err == nil || err.Error() != tc.want {
					t.Fatalf("Parse(%q) = %v, want %q", tc.args, err, tc.want)
				}
				first := "Usage of cmd:\n"
				if usage == customUsage {
					first = "usage line\n"
				}
				if !strings.HasPrefix(out.String(), tc.want+"\n"+first) || !strings.Contains(out.String(), "a duration") {
					t.Errorf("Parse(%q) printed %q, want the error line, then the usage", tc.args, out.String())
				}
				if strings.Contains(out.String(), "s3cret") {
					t.Errorf("Parse(%q) printed the password: %q", tc.args, out.String())
				}
			}
		})
	}
}

// TestReview32ParseAsFlag: what Shown quotes, and what flag prints with no
// value of the user's (a flag needing an argument, -h), is printed and
// returned exactly as fs.Parse does, usage and parsed values included.
func TestReview32ParseAsFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"ok", []string{"-port", "80", "-d", "1s", "-b", "rest", "-port", "x"}},
		{"bad_int", []string{"-port", "abc"}},
		{"bad_int_control", []string{"-port", "a\x1b[2Jb"}},
		{"bad_bool", []string{"-b=maybe"}},
		{"bad_duration", []string{"-d", "10"}},
		{"bad_custom_duration", []string{"-cd", "10"}},
		{"bad_custom", []string{"-url", "ftp"}},
		{"bad_custom_bool", []string{"-cb=no"}},
		{"range", []string{"-port", "99999999999999999999"}},
		{"not_defined", []string{"--verbose"}},
		{"bad_syntax", []string{"-=x"}},
		{"needs_argument", []string{"-port"}},
		{"needs_argument_name_shown_hides", []string{"-upstream-key"}},
		{"help", []string{"-h"}},
		{"help_long", []string{"--help", "-port", pwURL}},
		{"terminator", []string{"--", "-port", pwURL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, usage := range []int{nilUsage, defaultUsage, customUsage} {
				var want, got strings.Builder
				wfs, gfs := newFlagSet(&want, usage), newFlagSet(&got, usage)
				werr := wfs.Parse(tc.args)
				gerr := Parse(gfs, tc.args)
				if fmt.Sprint(gerr) != fmt.Sprint(werr) || errors.Is(gerr, flag.ErrHelp) != errors.Is(werr, flag.ErrHelp) {
					t.Errorf("Parse(%q) = %v, fs.Parse: %v", tc.args, gerr, werr)
				}
				if got.String() != want.String() {
					t.Errorf("Parse(%q) printed %q, fs.Parse: %q", tc.args, got.String(), want.String())
				}
				if fmt.Sprint(gfs.Args()) != fmt.Sprint(wfs.Args()) || gfs.Lookup("port").Value.String() != wfs.Lookup("port").Value.String() {
					t.Errorf("Parse(%q) left args %q port %v, fs.Parse %q %v", tc.args,
						gfs.Args(), gfs.Lookup("port").Value, wfs.Args(), wfs.Lookup("port").Value)
				}
				// The FlagSet is left as it was: its output, usage and error handling.
				got.Reset()
				if gfs.Usage != nil {
					gfs.Usage()
				}
				if gfs.Output() != &got || (gfs.Usage == nil) != (usage == nilUsage) || (got.Len() == 0) != (usage == nilUsage) ||
					gfs.ErrorHandling() != flag.ContinueOnError {
					t.Errorf("Parse(%q) changed the FlagSet: output %v, usage %q, handling %v", tc.args, gfs.Output(), got.String(), gfs.ErrorHandling())
				}
			}
		})
	}
}

// TestReview32ParseUsageElsewhere: a usage writing elsewhere than the
// FlagSet's output (as a binary's usage writes to its stderr) is printed
// after the error line, as flag does, and once.
func TestReview32ParseUsageElsewhere(t *testing.T) {
	var out strings.Builder
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.SetOutput(&wrapWriter{&out})
	fs.Usage = func() { out.WriteString("usage\n") }
	fs.Int("port", 0, "")
	if err := Parse(fs, []string{"-port", pwURL}); err == nil {
		t.Fatal("accepted")
	}
	if want := "invalid value " + hiddenLn + " for flag -port: parse error\nusage\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// wrapWriter writes to w: another writer than w, writing to the same place.
type wrapWriter struct{ w *strings.Builder }

func (l *wrapWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

// TestReview32ParseExitOnError: with ExitOnError, Parse exits as fs.Parse
// does (2 on an error, after printing it hidden and the usage; 0 on -h);
// with PanicOnError it panics with the error shown hidden.
func TestReview32ParseExitOnError(t *testing.T) {
	if args := os.Getenv("CLIARG_REVIEW32_ARGS"); args != "" {
		fs := flag.NewFlagSet("cmd", flag.ExitOnError)
		fs.SetOutput(os.Stdout)
		fs.Int("port", 0, "a port")
		Parse(fs, strings.Split(args, " "))
		os.Exit(7) // not reached
	}
	for _, tc := range []struct {
		args, out string
		code      int
	}{
		{"-port " + pwURL, "invalid value " + hiddenLn + " for flag -port: parse error\nUsage of cmd:\n", 2},
		{"-h", "Usage of cmd:\n", 0},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReview32ParseExitOnError$")
		cmd.Env = append(os.Environ(), "CLIARG_REVIEW32_ARGS="+tc.args)
		out, err := cmd.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.HasPrefix(string(out), tc.out) || strings.Contains(string(out), "s3cret") {
			t.Errorf("%s: exit status %d, printed %q; want %d, %q then the defaults", tc.args, code, out, tc.code, tc.out)
		}
	}

	var out strings.Builder
	fs := flag.NewFlagSet("cmd", flag.PanicOnError)
	fs.SetOutput(&out)
	fs.Duration("d", time.Second, "")
	defer func() {
		r := recover()
		err, _ := r.(error)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(out.String(), hiddenLn) {
			t.Errorf("PanicOnError: panicked with %v, printed %q", r, out.String())
		}
		if fs.ErrorHandling() != flag.PanicOnError {
			t.Errorf("PanicOnError: left %v", fs.ErrorHandling())
		}
	}()
	Parse(fs, []string{"-d", pwURL})
}

// panicValue is a flag.Value whose Set panics.
type panicValue struct{}

func (panicValue) String() string   { return "" }
func (panicValue) Set(string) error { panic("set") }

// TestReview32ParseRestoresOnPanic: a Set that panics leaves the FlagSet's
// output, usage and error handling as they were.
func TestReview32ParseRestoresOnPanic(t *testing.T) {
	var out strings.Builder
	fs := flag.NewFlagSet("cmd", flag.ExitOnError)
	fs.SetOutput(&out)
	fs.Var(panicValue{}, "p", "")
	func() {
		defer func() { _ = recover() }()
		Parse(fs, []string{"-p", "x"})
	}()
	out.Reset()
	fs.Usage()
	if fs.Output() != &out || !strings.HasPrefix(out.String(), "Usage of cmd:") || fs.ErrorHandling() != flag.ExitOnError {
		t.Errorf("left output %v, usage %q, handling %v", fs.Output(), out.String(), fs.ErrorHandling())
	}
}

// TestReview32ShownAny: a message of a form the flag package does not have
// (a later Go's) has every argument, flag name and value Shown hides shown
// so, quoted or not, but not a name of a defined flag.
func TestReview32ShownAny(t *testing.T) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.String("upstream-key", "", "")
	args := []string{"--upstream-key=k", "--token=" + pwURL, "https://u:s3cret@h"}
	msg := `new form -upstream-key: "` + pwURL + `" then https://u:s3cret@h, --token=` + pwURL
	want := "new form -upstream-key: " + hiddenLn + " then " + hiddenLn + ", " + hiddenLn
	if got := shownAny(fs, msg, args); got != want {
		t.Errorf("shownAny(%q) = %q, want %q", msg, got, want)
	}
}
