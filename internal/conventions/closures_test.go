// Package conventions_test checks what golangci-lint cannot: no non-test
// function literal (closure) is longer than 30 lines, and no function or
// closure takes more than 6 parameters (.golangci.yml holds the rest: funlen
// 60 lines, gocognit 20). A long closure is a named step without its name.
package conventions_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const (
	maxClosureLines = 30
	maxParams       = 6
)

// TestFunctionsAreShort walks every non-test Go file of the module.
func TestFunctionsAreShort(t *testing.T) {
	fset := token.NewFileSet()
	for _, path := range goFiles(t, "../..") {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("../..", path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			for _, problem := range problems(fset, fn) {
				t.Errorf("%s:%s: %s", rel, fn.Name.Name, problem)
			}
		}
	}
}

// problems returns what is wrong with fn and the closures in it.
func problems(fset *token.FileSet, fn *ast.FuncDecl) []string {
	var out []string
	if n := fn.Type.Params.NumFields(); n > maxParams {
		out = append(out, fmt.Sprintf("%d parameters (at most %d: pass an options struct)", n, maxParams))
	}
	ast.Inspect(fn, func(n ast.Node) bool {
		lit, ok := n.(*ast.FuncLit)
		if !ok {
			return true
		}
		at := fset.Position(lit.Pos())
		if lines := fset.Position(lit.Body.Rbrace).Line - fset.Position(lit.Body.Lbrace).Line - 1; lines > maxClosureLines {
			out = append(out, fmt.Sprintf("line %d: closure of %d lines (at most %d: give the step a name)", at.Line, lines, maxClosureLines))
		}
		if n := lit.Type.Params.NumFields(); n > maxParams {
			out = append(out, fmt.Sprintf("line %d: closure of %d parameters (at most %d)", at.Line, n, maxParams))
		}
		return true
	})
	return out
}

// goFiles lists the module's non-test Go files under root.
func goFiles(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			out = append(out, path)
		}
		return nil
	})
	if err != nil || len(out) < 50 {
		t.Fatalf("walking the module: %d files, %v", len(out), err)
	}
	return out
}
