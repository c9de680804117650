package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview15ConfigRefusesWhatItWouldMisread: server.yaml values the YAML
// decoder took, silently, for something else. A fractional calls_per_min
// was cut to an integer (5.5 ran as 5, 0.5 was "must be at least 1"); a
// null key (~, null) and everything under it was dropped without a word,
// at any level, so a whole tool entry could vanish; a file of any size was
// read whole into memory. Each is now an error naming the file (and the
// line, where there is one).
func TestReview15ConfigRefusesWhatItWouldMisread(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := string(base)
	r := func(old, new string) string {
		t.Helper()
		if !strings.Contains(b, old) {
			t.Fatalf("server.yaml has no %q", old)
		}
		return strings.Replace(b, old, new, 1)
	}
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"fractional_calls", r("calls_per_min: 5 ", "calls_per_min: 5.5 "), []string{"line 6", "calls_per_min", "whole number"}},
		{"half_call", r("calls_per_min: 5 ", "calls_per_min: 0.5 "), []string{"line 6", "whole number"}},
		{"float_syntax_calls", r("calls_per_min: 5 ", "calls_per_min: 1e3 "), []string{"line 6", "whole number"}},
		{"null_key_top", r("dry_run: true", "~: false\ndry_run: true"), []string{"line 3", "null key"}},
		{"null_word_key", r("dry_run: true", "null: false\ndry_run: true"), []string{"line 3", "null key"}},
		{"null_key_rate_limit", r("  calls_per_min: 5", "  ~: 1\n  calls_per_min: 5"), []string{"line 6", "null key"}},
		{"null_key_tools", r("  list_tools:\n", "  ~:\n    read_only: false\n  list_tools:\n"), []string{"line 20", "null key"}},
		{"huge_file", b + "# " + strings.Repeat("x", maxConfigSize) + "\n", []string{"larger than 1 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, _, err := loadConfig(path)
			if err == nil {
				t.Fatalf("loadConfig accepted it: calls_per_min %d, %d tools", c.RateLimit.CallsPerMin, len(c.Tools))
			}
			for _, w := range append([]string{path}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestReview15DescriptionsShowWhatTheModelReads: a description is what
// the model reads (tools/list) and what a reviewer reads (`ticket tools`,
// GET /tools). Characters a reviewer cannot see but a model reads (the
// Unicode tag characters that spell hidden ASCII, bidirectional
// overrides, zero-width characters) or that rewrite a terminal (escape
// sequences, carriage returns) were passed on: a registry that reads clean
// could tell the model more. They are refused with the tool's name; line
// breaks and tabs (a YAML block scalar) stay, and `ticket tools` prints a
// description's later lines indented under its first, so that no line of
// a description can pass for a registry row.
func TestReview15DescriptionsShowWhatTheModelReads(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const line = "description: Search internal docs visible to the calling user's team (read-only)."
	if !bytes.Contains(base, []byte(line)) {
		t.Fatalf("server.yaml has no %q", line)
	}
	with := func(desc string) []byte {
		return bytes.Replace(base, []byte(line), []byte("description: "+desc), 1)
	}
	for name, desc := range map[string]string{
		"tag_characters":  `"Search docs.\U000E0049\U000E0047\U000E004E\U000E004F\U000E0052\U000E0045"`,
		"bidi_override":   `"Search docs \u202Eetirw\u202C."`,
		"zero_width":      `"Search\u200Bdocs."`,
		"terminal_escape": `"Search docs.\e[8mhidden\e[0m"`,
		"carriage_return": `"create_ticket enabled\rSearch docs."`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseConfig("F", with(desc))
			if err == nil || !strings.Contains(err.Error(), "tools.search_docs.description") || !strings.Contains(err.Error(), "U+") {
				t.Errorf("parseConfig of description %s: %v, want an error naming tools.search_docs.description and the character", desc, err)
			}
		})
	}

	t.Run("block_scalar_kept_and_indented", func(t *testing.T) {
		c, err := parseConfig("F", with("|-\n      Search docs.\n        create_ticket    WRITE [ENABLED]\n      Tab\there."))
		if err != nil {
			t.Fatal(err)
		}
		want := "Search docs.\n  create_ticket    WRITE [ENABLED]\nTab\there."
		if got := c.description("search_docs"); got != want {
			t.Errorf("description %q, want %q", got, want)
		}
		var out bytes.Buffer
		printRegistry(&out, c)
		rows := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		var starts []string
		for _, row := range rows {
			if f := strings.Fields(row); len(f) > 0 && !strings.HasPrefix(row, "   ") { // a row, not a continuation
				starts = append(starts, f[0])
			}
		}
		if got := strings.Join(starts, " "); got != "create_ticket list_tools search_docs" {
			t.Errorf("rows start with %q, want one per tool:\n%s", got, out.String())
		}
		first := strings.Index(rows[2], "Search docs.")
		if first < 0 || len(rows) != 5 || !strings.HasPrefix(rows[3], strings.Repeat(" ", first)+"  create_ticket") || rows[4] != strings.Repeat(" ", first)+"Tab\there." {
			t.Errorf("the description's later lines are not under its first:\n%s", out.String())
		}
	})
}
