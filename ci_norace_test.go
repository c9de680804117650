package mcpguard_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRaceFreeTestsRunInCI: .ci/run runs the tests under the race
// detector, whose build leaves out the files built only without it
// (//go:build !race: allocation counts, frame sizes) and in which some
// tests skip or scale down (those that read raceEnabled), and then runs
// those once more in a normal build, by name. A test of either kind that
// the name pattern missed would never run whole in CI.
func TestRaceFreeTestsRunInCI(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go test -count=1 -run '([^']+)' \./\.\.\.$`).FindSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run has no line `go test -count=1 -run '<pattern>' ./...` running the race-free tests")
	}
	run := regexp.MustCompile(string(m[1]))
	testFunc := regexp.MustCompile(`^func (Test[A-Za-z0-9_]*)\(`)
	literal := regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`")
	raceRef := regexp.MustCompile(`\braceEnabled\b`)
	found := 0
	check := func(path, name, why string) {
		found++
		if !run.MatchString(name) {
			t.Errorf("%s: %s %s, and .ci/run's pattern %q does not run it in a normal build", path, name, why, m[1])
		}
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		raceFree, fn, flagged := false, "", false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "//go:build ") {
				raceFree = strings.Contains(line, "!race")
			}
			if name := testFunc.FindStringSubmatch(line); name != nil {
				fn, flagged = name[1], false
				if raceFree {
					check(path, fn, "is built only without -race")
				}
				continue
			}
			if strings.HasPrefix(line, "func ") {
				fn = ""
			}
			code := literal.ReplaceAllString(line, `""`)
			if i := strings.Index(code, "//"); i >= 0 {
				code = code[:i]
			}
			if fn != "" && !raceFree && !flagged && raceRef.MatchString(code) {
				flagged = true
				check(path, fn, "skips or scales down under -race (raceEnabled)")
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("found no test built only without -race or reading raceEnabled: the walk is broken")
	}
	if !t.Failed() {
		t.Logf("%d tests built only without -race or reading raceEnabled, all run by .ci/run's %q", found, m[1])
	}
}
