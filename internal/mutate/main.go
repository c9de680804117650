// Command mutate writes mutants of one Go file, for a mutation sweep: each
// mutant is the whole file with one small change, to be applied with
// `go test -overlay` (run.sh beside this file does that for every mutant and
// tells which the tests kill). A mutant the tests survive marks behaviour no
// test pins, or a change that cannot alter behaviour; a reader decides which.
//
//	go run ./internal/mutate -file F [-func REGEXP] -out DIR
//
// writes DIR/NNN.go and prints one line per mutant:
// "NNN<TAB>line:col<TAB>function: description". The mutations: the
// operators == != < <= > >= && || swapped in pairs, an if condition negated,
// a ! removed, true and false swapped, a call statement deleted, a returned
// error made nil (a last result named like err, or errors.New / fmt.Errorf),
// an integer literal plus one. Some mutants do not compile (a variable left
// unused); run.sh reports them as nobuild.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

func main() {
	file := flag.String("file", "", "the Go file to mutate")
	fn := flag.String("func", ".", "a regexp of the functions to mutate (Name or Recv.Name)")
	out := flag.String("out", "", "the directory for the mutants")
	flag.Parse()
	if *file == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: mutate -file F [-func REGEXP] -out DIR")
		os.Exit(2)
	}
	re, err := regexp.Compile(*fn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate: -func:", err)
		os.Exit(2)
	}
	src, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	ms, err := mutants(*file, src, re)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	for i, m := range ms {
		id := fmt.Sprintf("%03d", i)
		if err := os.WriteFile(filepath.Join(*out, id+".go"), m.src, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(2)
		}
		fmt.Printf("%s\t%d:%d\t%s\n", id, m.line, m.col, m.desc)
	}
}

// A mutant is a whole source file with one change.
type mutant struct {
	line, col int
	desc      string
	src       []byte
}

// A site is one change to the syntax tree, with its undoing.
type site struct {
	pos   token.Pos
	desc  string
	apply func() (undo func())
}

// mutants returns every mutant of the functions in src whose name matches re.
func mutants(name string, src []byte, re *regexp.Regexp) ([]mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var sites []site
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := funcName(fd); re.MatchString(n) {
			sites = append(sites, collect(fd.Body, n)...)
		}
	}
	ms := make([]mutant, 0, len(sites))
	for _, s := range sites {
		undo := s.apply()
		var buf bytes.Buffer
		err := printer.Fprint(&buf, fset, f)
		undo()
		if err != nil {
			return nil, err
		}
		p := fset.Position(s.pos)
		ms = append(ms, mutant{line: p.Line, col: p.Column, desc: s.desc, src: buf.Bytes()})
	}
	return ms, nil
}

// funcName is fd's name, Recv.Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

var swaps = map[token.Token]token.Token{
	token.EQL: token.NEQ, token.NEQ: token.EQL,
	token.LSS: token.LEQ, token.LEQ: token.LSS,
	token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.LAND: token.LOR, token.LOR: token.LAND,
}

var errName = regexp.MustCompile(`(?i)err`)

// collect returns the mutation sites in body, of the function named fn.
func collect(body *ast.BlockStmt, fn string) []site {
	var ss []site
	add := func(pos token.Pos, desc string, apply func() func()) {
		ss = append(ss, site{pos, fn + ": " + desc, apply})
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if to, ok := swaps[x.Op]; ok {
				from := x.Op
				add(x.OpPos, fmt.Sprintf("%s -> %s", from, to), func() func() {
					x.Op = to
					return func() { x.Op = from }
				})
			}
		case *ast.IfStmt:
			c := x.Cond
			add(x.If, "if condition negated", func() func() {
				x.Cond = &ast.UnaryExpr{Op: token.NOT, X: &ast.ParenExpr{X: c}}
				return func() { x.Cond = c }
			})
		case *ast.UnaryExpr:
			if x.Op == token.NOT {
				inner := x.X // !X becomes !!X, which is X
				add(x.OpPos, "! removed", func() func() {
					x.X = &ast.UnaryExpr{Op: token.NOT, X: inner}
					return func() { x.X = inner }
				})
			}
		case *ast.Ident:
			if x.Name == "true" || x.Name == "false" {
				from, to := x.Name, "true"
				if from == "true" {
					to = "false"
				}
				add(x.NamePos, from+" -> "+to, func() func() {
					x.Name = to
					return func() { x.Name = from }
				})
			}
		case *ast.BasicLit:
			if x.Kind == token.INT {
				from := x.Value
				if v, err := strconv.ParseInt(from, 0, 64); err == nil {
					to := strconv.FormatInt(v+1, 10)
					add(x.ValuePos, from+" -> "+to, func() func() {
						x.Value = to
						return func() { x.Value = from }
					})
				}
			}
		case *ast.BlockStmt:
			for i, s := range x.List {
				es, ok := s.(*ast.ExprStmt)
				if !ok {
					continue
				}
				if _, ok := es.X.(*ast.CallExpr); !ok {
					continue
				}
				add(s.Pos(), "call statement deleted", func() func() {
					x.List[i] = &ast.EmptyStmt{Semicolon: s.Pos(), Implicit: true}
					return func() { x.List[i] = s }
				})
			}
		case *ast.ReturnStmt:
			if len(x.Results) > 0 && returnsError(x.Results[len(x.Results)-1]) {
				last := x.Results[len(x.Results)-1]
				add(x.Return, "returned error made nil", func() func() {
					x.Results[len(x.Results)-1] = ast.NewIdent("nil")
					return func() { x.Results[len(x.Results)-1] = last }
				})
			}
		}
		return true
	})
	return ss
}

// returnsError reports whether e looks like an error: a name like err
// (not nil), or a call of errors.New or fmt.Errorf.
func returnsError(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name != "nil" && errName.MatchString(x.Name)
	case *ast.CallExpr:
		sel, ok := x.Fun.(*ast.SelectorExpr)
		return ok && (sel.Sel.Name == "Errorf" || sel.Sel.Name == "New")
	}
	return false
}
