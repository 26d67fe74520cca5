package main

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
)

const src = `package p

import "io"

const Max = 3
const name = "x"

var Default = &T{}

type T struct {
	Name string
	io.Reader
	hidden int
}

func (t *T) Close() error { return nil }
func (T) String() string  { return "" }
func (T) private()        {}

type Runner interface {
	Run(n int) (bool, error)
	seal()
}

type Set[E comparable] map[E]struct{}

type Alias = T

func New(opts ...string) (*T, error) { return nil, nil }
`

func TestPackageAPI(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("example.com/p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `pkg example.com/p, const Max untyped int = 3
pkg example.com/p, func New(opts ...string) (*T, error)
pkg example.com/p, method (*T) Close() error
pkg example.com/p, method (T) String() string
pkg example.com/p, type Alias = T
pkg example.com/p, type Runner interface
pkg example.com/p, type Runner interface, Run(n int) (bool, error)
pkg example.com/p, type Runner interface, unexported methods
pkg example.com/p, type Set[E comparable] map[E]struct{}
pkg example.com/p, type T struct
pkg example.com/p, type T struct, Name string
pkg example.com/p, type T struct, embedded io.Reader
pkg example.com/p, var Default *T`
	lines := packageAPI(pkg)
	slices.Sort(lines) // as moduleAPI does
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("packageAPI =\n%s\nwant\n%s", got, want)
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got []string
		out       string
	}{
		{"same", []string{"a", "b"}, []string{"a", "b"}, ""},
		{"added", []string{"a"}, []string{"a", "b"}, "+b\n"},
		{"removed", []string{"a", "b"}, []string{"b"}, "-a\n"},
		{"changed", []string{"f(int)"}, []string{"f(string)"}, "-f(int)\n+f(string)\n"},
		{"from nothing", nil, []string{"a"}, "+a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := diff(tc.want, tc.got); got != tc.out {
				t.Errorf("diff(%q, %q) = %q, want %q", tc.want, tc.got, got, tc.out)
			}
		})
	}
}
