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
// (//go:build !race: allocation counts, frame sizes), and then runs those
// once more in a normal build, by name. A test of such a file that the
// name pattern missed would never run in CI.
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
	found := 0
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
		raceFree := false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "//go:build ") {
				raceFree = strings.Contains(line, "!race")
			}
			if strings.HasPrefix(line, "package ") && !raceFree {
				return nil
			}
			if name := testFunc.FindStringSubmatch(line); name != nil {
				found++
				if !run.MatchString(name[1]) {
					t.Errorf("%s: %s is built only without -race, and .ci/run's pattern %q does not run it", path, name[1], m[1])
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("found no test built only without -race: the walk is broken")
	}
	if !t.Failed() {
		t.Logf("%d tests built only without -race, all run by .ci/run's %q", found, m[1])
	}
}
