package main

import (
	"bytes"
	"fmt"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// moduleAPI loads the packages of the module in dir and lists their
// exported API, sorted.
func moduleAPI(dir string) ([]string, error) {
	cfg := &packages.Config{Dir: dir, Mode: packages.NeedName | packages.NeedTypes | packages.NeedModule}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	var lines []string
	var errs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
		if p.Name == "main" || isInternal(p.PkgPath) || p.Types == nil {
			continue
		}
		lines = append(lines, packageAPI(p.Types)...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	slices.Sort(lines)
	return slices.Compact(lines), nil
}

func isInternal(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "internal")
}

// packageAPI lists the exported names of pkg, each line starting with
// "pkg PATH, ".
func packageAPI(pkg *types.Package) []string {
	q := func(other *types.Package) string {
		if other == pkg {
			return ""
		}
		return other.Name()
	}
	ts := func(t types.Type) string { return types.TypeString(t, q) }
	prefix := "pkg " + pkg.Path() + ", "
	var out []string
	add := func(format string, args ...any) { out = append(out, prefix+fmt.Sprintf(format, args...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, ts(o.Type()), o.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, ts(o.Type()))
		case *types.Func:
			add("func %s%s", name, signature(o.Type().(*types.Signature), q))
		case *types.TypeName:
			typeAPI(o, q, add)
		}
	}
	return out
}

// typeAPI lists a type: its kind, exported fields or interface methods, and
// its exported methods.
func typeAPI(o *types.TypeName, q types.Qualifier, add func(string, ...any)) {
	ts := func(t types.Type) string { return types.TypeString(t, q) }
	name := o.Name()
	if o.IsAlias() {
		add("type %s = %s", name, ts(types.Unalias(o.Type())))
		return
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return
	}
	head := name
	if tp := named.TypeParams(); tp.Len() > 0 {
		var ps []string
		for i := range tp.Len() {
			p := tp.At(i)
			ps = append(ps, p.Obj().Name()+" "+ts(p.Constraint()))
		}
		head += "[" + strings.Join(ps, ", ") + "]"
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		add("type %s struct", head)
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				add("type %s struct, embedded %s", name, ts(f.Type()))
			} else {
				add("type %s struct, %s %s", name, f.Name(), ts(f.Type()))
			}
		}
	case *types.Interface:
		add("type %s interface", head)
		unexported := false
		for i := range u.NumMethods() {
			m := u.Method(i)
			if !m.Exported() {
				unexported = true
				continue
			}
			add("type %s interface, %s%s", name, m.Name(), signature(m.Type().(*types.Signature), q))
		}
		for i := range u.NumEmbeddeds() {
			if _, isIface := u.EmbeddedType(i).Underlying().(*types.Interface); !isIface {
				add("type %s interface, %s", name, ts(u.EmbeddedType(i))) // a constraint's type term
			}
		}
		if unexported {
			add("type %s interface, unexported methods", name)
		}
	default:
		add("type %s %s", head, ts(u))
	}
	for i := range named.NumMethods() {
		m := named.Method(i)
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		recv := name
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			recv = "*" + name
		}
		add("method (%s) %s%s", recv, m.Name(), signature(sig, q))
	}
}

// signature is sig without "func": parameters and results.
func signature(sig *types.Signature, q types.Qualifier) string {
	var b bytes.Buffer
	types.WriteSignature(&b, sig, q)
	return b.String()
}
