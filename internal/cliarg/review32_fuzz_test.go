package cliarg

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// FuzzParse: whatever value is typed into an int, bool or duration flag,
// or given as an unknown flag's name, Parse never panics, and neither what
// it prints nor its error holds the value whole when Shown would hide it.
func FuzzParse(f *testing.F) {
	for _, v := range []string{"postgres://u:s3cret@db/x", "eyJhbGciOiJIUzI1NiJ9.e30.x", "Bearer abcdefABCDEF0123456789", "x", "12"} {
		for form := range 6 {
			f.Add(v, form)
		}
	}
	f.Fuzz(func(t *testing.T, v string, form int) {
		fs := flag.NewFlagSet("fz", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		fs.Int("port", 0, "the port")
		fs.Bool("b", false, "a switch")
		fs.Duration("d", 0, "a wait")
		var args []string
		switch uint(form) % 6 {
		case 0:
			args = []string{"-port", v}
		case 1:
			args = []string{"-port=" + v}
		case 2:
			args = []string{"--" + v}
		case 3:
			args = []string{"-b=" + v}
		case 4:
			args = []string{"-d", v}
		case 5:
			args = []string{v}
		}
		err := Parse(fs, args)
		if len(v) < 8 || !hides(v) {
			return
		}
		text := out.String()
		if err != nil {
			text += "\n" + err.Error()
		}
		if strings.Contains(text, v) {
			t.Fatalf("args %q: printed the value:\n%s", args, text)
		}
	})
}
