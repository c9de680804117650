package cliarg

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// newFlagSet2 is a FlagSet with flags whose Set errors quote the value in
// ways other than strconv.Quote: a time.Time and a netip.Addr TextVar, a
// Func quoting with %+q, and flag's own kinds for the twin comparison.
func newFlagSet2(out *strings.Builder) *flag.FlagSet {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.TextVar(new(time.Time), "since", time.Time{}, "a time")
	fs.TextVar(new(netip.Addr), "addr", netip.Addr{}, "an address")
	fs.Func("ascii", "a value quoted with %+q", func(v string) error {
		return fmt.Errorf("want a name, not %+q", v)
	})
	fs.Func("hex", "a value quoted byte by byte", func(v string) error {
		return fmt.Errorf("bad bytes %q", []byte(v+"\xff"))
	})
	fs.BoolFunc("bf", "a bool func", func(v string) error {
		return fmt.Errorf("want on or off, not %q", v)
	})
	fs.Int("port", 0, "a port")
	fs.Bool("b", false, "a boolean")
	fs.String("s", "", "a string")
	return fs
}

// TestReview32ParseHidesEscapedSecrets: a Set error that repeats a value Shown
// hides in an escaped form (time's quoting, %+q, \x per byte, invalid UTF-8)
// does not show it: the escapes are the password, spelt out.
func TestReview32ParseHidesEscapedSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, flag, v string
	}{
		{"time_non_ascii", "since", "用户:密码密码"},
		{"time_long_non_ascii", "since", strings.Repeat("密", 30)},
		{"ascii_quote", "ascii", "用户:密码密码"},
		{"bytes", "hex", "用户:密码密码"},
		{"netip_invalid_utf8", "addr", "\xff\xfe:\xfa\xfb\xfc\xfd\xf1\xf2"},
		{"bool_func_quote", "bf", "用户:密码密码"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			args := []string{"-" + tc.flag + "=" + tc.v}
			err := Parse(newFlagSet2(&out), args)
			if err == nil || !strings.HasSuffix(err.Error(), " -"+tc.flag+": "+errNotShown) &&
				!strings.Contains(err.Error(), hiddenLn) {
				t.Errorf("Parse(%q) = %v, want the value not shown", args, err)
			}
			for _, leak := range escapedForms(tc.v) {
				if strings.Contains(out.String(), leak) || strings.Contains(err.Error(), leak) {
					t.Fatalf("Parse(%q) = %q: repeats %q", args, err, leak)
				}
			}
		})
	}
}

// escapedForms are forms, 2 bytes of the value or more, that its escapes spell.
func escapedForms(v string) []string {
	var forms []string
	for i := 0; i+2 <= len(v); i++ {
		forms = append(forms, fmt.Sprintf(`\x%02x\x%02x`, v[i], v[i+1]))
	}
	for _, r := range v {
		if r >= 0x80 && r != 0xfffd {
			forms = append(forms, fmt.Sprintf(`\u%04x`, r))
		}
	}
	return forms
}

// TestReview32ParseAsFlagMore: more ordinary mistakes, compared byte for
// byte with fs.Parse: output, error, fs.Args() and parsed values.
func TestReview32ParseAsFlagMore(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-"},
		{"-", "-port", "1"},
		{"-b=x"},
		{"-b=", "rest"},
		{"-b", "false", "-port", "2"},
		{"---x"},
		{"-=x"},
		{"--=x"},
		{"-help=x"},
		{"-h=x", "-port", "3"},
		{"-x=1"},
		{"-port=1", "--", "-b"},
		{"-port", "1", "file", "-b"},
		{"-since", "2020-01-02"},
		{"-since", "2020-01-02T03:04:05Z", "-addr", "1.2.3"},
		{"-addr", "1.2.3.4:80"},
		{"-ascii", "é"},
		{"-bf=yes"},
		{"-s", "a\nb", "-port", "a\"b\xff"},
		{"-port", "-b"},
		{"-port="},
	} {
		var want, got strings.Builder
		wfs, gfs := newFlagSet2(&want), newFlagSet2(&got)
		werr := wfs.Parse(args)
		gerr := Parse(gfs, args)
		help := errors.Is(gerr, flag.ErrHelp)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || help != errors.Is(werr, flag.ErrHelp) {
			t.Errorf("Parse(%q) = %v, fs.Parse: %v", args, gerr, werr)
		}
		if got.String() != want.String() {
			t.Errorf("Parse(%q) printed %q, fs.Parse: %q", args, got.String(), want.String())
		}
		if fmt.Sprint(gfs.Args()) != fmt.Sprint(wfs.Args()) || gfs.NFlag() != wfs.NFlag() ||
			!gfs.Parsed() {
			t.Errorf("Parse(%q) left args %q, %d set; fs.Parse %q, %d",
				args, gfs.Args(), gfs.NFlag(), wfs.Args(), wfs.NFlag())
		}
		wfs.VisitAll(func(f *flag.Flag) {
			if g := gfs.Lookup(f.Name).Value.String(); g != f.Value.String() {
				t.Errorf("Parse(%q) set -%s to %q, fs.Parse %q", args, f.Name, g, f.Value)
			}
		})
	}
}
