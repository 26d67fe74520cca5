package release_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing/fstest"

	"github.com/hopdag/hopdag/release"
)

// Load a catalog directory and list its releases in order.
func ExampleLoad() {
	c, err := release.Load(os.DirFS("../testdata/catalog"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range c.Versions() {
		r, _ := c.Release(v)
		fmt.Printf("%-12s ships %d components\n", v, len(r.Components))
	}
	// Output:
	// v26.03       ships 11 components
	// v26.06-rc.1  ships 11 components
	// v26.06-rc.2  ships 11 components
	// v26.06-rc.3  ships 11 components
	// v26.06       ships 11 components
	// v26.06.1     ships 11 components
	// v26.09-rc.1  ships 11 components
	// v26.09       ships 11 components
}

// Look up a release and the component versions it ships.
func ExampleCatalog_ComponentsOf() {
	c, err := release.Load(os.DirFS("../testdata/catalog"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := c.Release(release.MustParseVersion("v26.09"))
	for _, cv := range c.ComponentsOf(r)[:4] {
		fmt.Printf("%s %s (%s) after %v\n", cv.Name, cv.Version, cv.Type, cv.Dependencies)
	}
	// Output:
	// pre-upgrade-resources v1.2.0 (manifest) after []
	// provider v1.5.0 (manifest) after []
	// bkeagent v1.5.0 (inline) after []
	// etcd v3.6.4 (inline) after [bkeagent]
}

// Bad input: every problem at once, with file:line, field path and a fix.
func ExampleLoad_invalid() {
	fsys := fstest.MapFS{"etcd.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata:
  name: etcd
spec:
  name: etcd
  version: v3.5.x
  handlr: etcd
`)}}
	_, err := release.Load(fsys)
	fmt.Println(err)
	fmt.Println(errors.Is(err, release.ErrInvalidCatalog))
	// Output:
	// release: invalid catalog: 2 problems
	//   etcd.yaml:7: spec.version: invalid version "v3.5.x": "x" is not a decimal number
	//   etcd.yaml:8: spec.handlr: unknown field; did you mean "handler"?
	// true
}

// Versions keep their spelling and order semantically.
func ExampleVersion_Compare() {
	var vs []release.Version
	for _, s := range []string{"v26.09-rc.1", "v26.06", "v26.06-rc.10", "v26.06.1", "v26.06-rc.2", "v26.06-rc.3"} {
		v, err := release.ParseVersion(s)
		if err != nil {
			fmt.Println(err)
			return
		}
		vs = append(vs, v)
	}
	slices.SortFunc(vs, release.Version.Compare)
	fmt.Println(vs)

	a, b := release.MustParseVersion("v26.06"), release.MustParseVersion("26.6.0")
	fmt.Println(a, "==", b, a.Equal(b), a.Canonical())
	// Output:
	// [v26.06-rc.2 v26.06-rc.3 v26.06-rc.10 v26.06 v26.06.1 v26.09-rc.1]
	// v26.06 == 26.6.0 true 26.6.0
}

// A range that starts at a release candidate admits that release's
// candidates, and never the candidates of a later release.
func ExampleConstraint_Check() {
	c, err := release.ParseConstraint(">= v26.06-rc.2, < v26.07")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range []string{"v26.06-rc.1", "v26.06-rc.2", "v26.06-rc.10", "v26.06", "v26.06.1", "v26.07-rc.1", "v26.07"} {
		fmt.Printf("%-12s %v\n", s, c.Check(release.MustParseVersion(s)))
	}
	// Output:
	// v26.06-rc.1  false
	// v26.06-rc.2  true
	// v26.06-rc.10 true
	// v26.06       true
	// v26.06.1     true
	// v26.07-rc.1  false
	// v26.07       false
}
