package cliarg

import (
	"flag"
	"io"
	"testing"
)

// TestReview63Twice: Twice names a flag that args give twice, in any of
// the flag package's spellings, and stops where fs.Parse stops.
func TestReview63Twice(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rate", "5"}, ""},
		{[]string{"-rate", "5", "-rate", "6"}, "rate"},
		{[]string{"--rate=5", "-rate", "6"}, "rate"},
		{[]string{"-v", "-v=false"}, "v"},
		{[]string{"-v", "-name", "-name"}, ""}, // -name's value is "-name"
		{[]string{"-name", "-v", "-v"}, ""},    // -name's value is "-v"
		{[]string{"-rate", "5", "--", "-rate", "6"}, ""},
		{[]string{"-rate", "5", "cmd", "-rate", "6"}, ""},
		{[]string{"-name", "a", "-rate", "1", "-name=b"}, "name"},
		{nil, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("rate", 0, "")
		fs.String("name", "", "")
		fs.Bool("v", false, "")
		if err := fs.Parse(tc.args); err != nil && tc.want != "" {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got := Twice(fs, tc.args); got != tc.want {
			t.Errorf("Twice(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
