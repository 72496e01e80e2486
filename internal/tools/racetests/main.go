// Command racetests lists the tests that behave differently under the race
// detector (their body reads raceEnabled: they skip, or relax a bound),
// one package per line as "PACKAGE ^(TestA|TestB)$", so that .ci/run can
// run them once more without -race. A new test that skips under -race is
// picked up without editing .ci/run.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	byDir := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "examples") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			if readsRaceEnabled(fn.Body) {
				dir := "./" + filepath.ToSlash(filepath.Dir(path))
				byDir[dir] = append(byDir[dir], fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "racetests:", err)
		os.Exit(1)
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		fmt.Printf("%s ^(%s)$\n", d, strings.Join(byDir[d], "|"))
	}
}

// readsRaceEnabled reports whether the identifier raceEnabled occurs in n.
func readsRaceEnabled(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "raceEnabled" {
			found = true
		}
		return !found
	})
	return found
}
