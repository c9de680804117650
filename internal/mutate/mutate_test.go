package main

import (
	"bytes"
	"go/parser"
	"go/printer"
	"go/token"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sample = `package p

import "errors"

func f(a, b int, ok bool) (int, error) {
	if a == b && !ok {
		return 0, errors.New("x")
	}
	g()
	return 1, nil
}

func g() {}

type T struct{}

func (*T) m(err error) error { return err }
`

// TestMutants: every kind of mutation is made once where it applies, in
// the functions -func selects, and each mutant is the file (as go/printer
// writes it) with exactly that one line changed (compared word by word:
// the printer aligns with tabs).
func TestMutants(t *testing.T) {
	ms, err := mutants("p.go", []byte(sample), regexp.MustCompile(`^(f|T\.m)$`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.desc)
	}
	want := []string{ // in the order ast.Inspect meets them
		"f: call statement deleted",
		"f: if condition negated",
		"f: && -> ||",
		"f: == -> !=",
		"f: ! removed",
		"f: returned error made nil",
		"f: 0 -> 1",
		"f: 1 -> 2",
		"T.m: returned error made nil",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("mutants (-want +got):\n%s", diff)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", sample, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var orig bytes.Buffer
	if err := printer.Fprint(&orig, fset, f); err != nil {
		t.Fatal(err)
	}
	origLines := strings.Split(orig.String(), "\n")
	changed := map[string]string{
		"f: if condition negated":      "\tif !(a == b && !ok) {",
		"f: && -> ||":                  "\tif a == b || !ok {",
		"f: == -> !=":                  "\tif a != b && !ok {",
		"f: ! removed":                 "\tif a == b && !!ok {",
		"f: 0 -> 1":                    "\t\treturn 1, errors.New(\"x\")",
		"f: returned error made nil":   "\t\treturn 0, nil",
		"f: call statement deleted":    "",
		"f: 1 -> 2":                    "\treturn 2, nil",
		"T.m: returned error made nil": "func (*T) m(err error) error { return nil }",
	}
	for _, m := range ms {
		if _, err := parser.ParseFile(token.NewFileSet(), "m.go", m.src, 0); err != nil {
			t.Errorf("%s: the mutant does not parse: %v", m.desc, err)
			continue
		}
		lines := strings.Split(string(m.src), "\n")
		if len(lines) != len(origLines) {
			t.Errorf("%s: %d lines, want %d", m.desc, len(lines), len(origLines))
			continue
		}
		var diffs []string
		for i := range lines {
			if lines[i] != origLines[i] {
				diffs = append(diffs, strings.Join(strings.Fields(lines[i]), " "))
				if i+1 != m.line {
					t.Errorf("%s: line %d changed, the mutant says %d", m.desc, i+1, m.line)
				}
			}
		}
		if want := strings.Join(strings.Fields(changed[m.desc]), " "); len(diffs) != 1 || diffs[0] != want {
			t.Errorf("%s: changed lines %q, want only %q", m.desc, diffs, want)
		}
	}
}

// TestMutantsBadSource: a file that does not parse is an error, not an
// empty sweep that would look like one with nothing to kill.
func TestMutantsBadSource(t *testing.T) {
	if _, err := mutants("p.go", []byte("package p\nfunc {"), regexp.MustCompile(".")); err == nil {
		t.Error("mutants of a file that does not parse: no error")
	}
}
