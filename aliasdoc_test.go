package kit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/redisx-go/kit"

// TestAliasDocsNameEveryFieldAndMethod: go doc shows an alias's own doc
// comment and nothing of the type it names (type Dedicated =
// backend.Dedicated, no methods), so an exported alias of a public
// package to a type of this module must name, in its doc comment, every
// exported field and method of that type — where a user of the alias
// looks. A field or method added to the type fails this test until the
// alias's doc lists it.
func TestAliasDocsNameEveryFieldAndMethod(t *testing.T) {
	aliases := 0
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); dir != "." && (strings.HasPrefix(name, ".") || name == "internal" || name == "testdata") {
			return filepath.SkipDir
		}
		for _, file := range parseDir(t, dir) {
			imports := map[string]string{}
			for _, is := range file.Imports {
				path, _ := strconv.Unquote(is.Path.Value)
				name := path[strings.LastIndex(path, "/")+1:]
				if is.Name != nil {
					name = is.Name.Name
				}
				imports[name] = path
			}
			for _, decl := range file.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					sel, ok := ts.Type.(*ast.SelectorExpr)
					if !ts.Assign.IsValid() || !ts.Name.IsExported() || !ok {
						continue
					}
					x, _ := sel.X.(*ast.Ident)
					if x == nil || !strings.HasPrefix(imports[x.Name], module+"/") {
						continue
					}
					aliases++
					doc := ts.Doc
					if doc == nil {
						doc = gd.Doc
					}
					where := dir + "." + ts.Name.Name + " = " + x.Name + "." + sel.Sel.Name
					if doc == nil {
						t.Errorf("%s: no doc comment", where)
						continue
					}
					text := doc.Text()
					target := filepath.FromSlash(strings.TrimPrefix(imports[x.Name], module+"/"))
					for _, member := range members(t, target, sel.Sel.Name) {
						if !regexp.MustCompile(`\b` + member + `\b`).MatchString(text) {
							t.Errorf("%s: its doc comment does not name %s", where, member)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if aliases == 0 {
		t.Fatal("no alias found: the walk is broken")
	}
}

// parseDir parses the non-test Go files of dir, with comments.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), m, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// members returns the exported fields (or interface methods) of type
// name in the package at dir, and the exported methods declared on it.
func members(t *testing.T, dir, name string) []string {
	t.Helper()
	var out []string
	found := false
	for _, file := range parseDir(t, dir) {
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || ts.Name.Name != name {
						continue
					}
					found = true
					var list *ast.FieldList
					switch typ := ts.Type.(type) {
					case *ast.StructType:
						list = typ.Fields
					case *ast.InterfaceType:
						list = typ.Methods
					}
					if list == nil {
						continue
					}
					for _, f := range list.List {
						for _, n := range f.Names {
							if n.IsExported() {
								out = append(out, n.Name)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || !d.Name.IsExported() {
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.Name == name {
					out = append(out, d.Name.Name)
				}
			}
		}
	}
	if !found {
		t.Fatalf("type %s not found in %s", name, dir)
	}
	return out
}
