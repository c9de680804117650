package mcpguard_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCommentLinesFit holds the house style's width of comment lines: at
// most 100 columns (a tab counted as 4) in every non-test Go file of the
// module, but for code blocks in doc comments ("//" and a tab), which keep
// the width of the code they show, and directives. Sessions' edits have
// run past it more than once; the final reads found them by hand.
func TestCommentLinesFit(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimLeft(sc.Text(), "\t ")
			if !strings.HasPrefix(line, "//") || strings.HasPrefix(line, "//\t") ||
				strings.HasPrefix(line, "//go:") || strings.HasPrefix(line, "//lint:") {
				continue
			}
			if w := utf8.RuneCountInString(strings.ReplaceAll(sc.Text(), "\t", "    ")); w > 100 {
				t.Errorf("%s:%d: a comment line of %d columns, over 100", path, n, w)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
