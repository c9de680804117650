package main

import (
	"strings"
	"testing"
)

// TestReview32FlagValueNotShown: a URL with its password typed into a
// number flag (the server's --rate, the fake gateway's --port) was printed
// whole by the flag package ("invalid value \"redis://...\" for flag
// -rate"). Both flag sets now parse with cliarg.Parse, which shows it as
// cliarg.Shown does; the usage follows and the exit status stays 2.
func TestReview32FlagValueNotShown(t *testing.T) {
	const pw = "redis://default:s3cret@127.0.0.1:6379"
	for _, tc := range []struct {
		args  []string
		usage string
	}{
		{[]string{"--gateway", "http://127.0.0.1:1", "--rate", pw}, "usage:\n  shop --gateway URL"},
		{[]string{"--max-in-flight=" + pw}, "usage:\n  shop --gateway URL"},
		{[]string{"fake-gateway", "--port", pw}, "Usage of shop fake-gateway"},
	} {
		var out strings.Builder
		if code := run(tc.args, &out, &out); code != 2 {
			t.Errorf("%q: exit %d, want 2; output:\n%s", tc.args, code, out.String())
		}
		if strings.Contains(out.String(), "s3cret") || !strings.Contains(out.String(), "not shown") ||
			!strings.Contains(out.String(), tc.usage) {
			t.Errorf("%q: output %q: want the value named, not shown, then the usage", tc.args, out.String())
		}
	}
	var out strings.Builder
	run([]string{"fake-gateway", "--port", "x"}, &out, &out)
	if !strings.HasPrefix(out.String(), `invalid value "x" for flag -port: parse error`+"\n") {
		t.Errorf("a plain bad value is not quoted as before: %q", out.String())
	}
}
