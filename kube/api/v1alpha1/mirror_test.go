package v1alpha1_test

import (
	"encoding"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/release"
)

// TestSpecsMirrorCatalog checks that each catalog kind's spec has the field
// paths of the catalog document it mirrors. A field of package release
// that the CRD lacks is pruned by the API server's structural schema
// without a word: applied as objects, a catalog would lose it (an approval
// gate, a rollback policy) between its directory and the catalog an
// operator loads from the cluster. A field only the CRD has would be
// refused by the catalog loader.
//
// Paths are the JSON names of the v1alpha1 types and the YAML names of the
// release types (the catalog loader decodes YAML; the walk also checks that
// a release field's JSON name is its YAML name). Types may differ (a
// release.Duration or release.Constraint is a string in the CRD, a
// release.Version a v1alpha1.Version): a leaf is a value that marshals
// itself or is not a struct. A list is written "[]", a map "{}", so
// that a list in one and a single value in the other differ too.
func TestSpecsMirrorCatalog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catalog any // the release type
		crd     any // the v1alpha1 spec
		// fromMeta are the release type's top-level fields that a
		// document writes as metadata.name rather than in its spec: JSON
		// "name" but YAML "-" (release.Release.Name, UpgradePath.Name).
		// The walk leaves them out of the release paths, and the test
		// checks they are there with exactly those tags, so that a new
		// yaml:"-" field is not silently exempt.
		fromMeta []string
	}{
		{"Release", release.Release{}, v1alpha1.ReleaseSpec{}, []string{"Name"}},
		{"ComponentVersion", release.ComponentVersion{}, v1alpha1.ComponentVersionSpec{}, nil},
		{"UpgradePath", release.UpgradePath{}, v1alpha1.UpgradePathSpec{}, []string{"Name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := reflect.TypeOf(tc.catalog)
			for _, name := range tc.fromMeta {
				f, ok := rt.FieldByName(name)
				if assert.True(t, ok, "release.%s has no field %s", rt.Name(), name) {
					assert.Equal(t, `json:"name" yaml:"-"`, string(f.Tag), "release.%s.%s comes from metadata.name", rt.Name(), name)
				}
			}
			w := walker{release: true, skip: tc.fromMeta}
			w.walk(rt, "")
			for _, m := range w.mismatch {
				t.Errorf("release.%s: %s", rt.Name(), m)
			}
			want := w.paths
			assert.NotEmpty(t, want, "no paths found in release.%s", rt.Name())
			w = walker{}
			w.walk(reflect.TypeOf(tc.crd), "")
			got := w.paths
			missing := difference(want, got)
			extra := difference(got, want)
			assert.Empty(t, missing, "%T lacks these fields of release.%s: the API server would prune them; add them (with kubebuilder markers) and run go generate ./api/...", tc.crd, rt.Name())
			assert.Empty(t, extra, "%T has fields that release.%s does not: the catalog loader would refuse them", tc.crd, rt.Name())
		})
	}
}

// TestWalker pins the walk that TestSpecsMirrorCatalog relies on.
func TestWalker(t *testing.T) {
	type leaf struct{ release.Version }
	type inner struct {
		Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
	}
	type embedded struct {
		Gate *inner `json:"gate,omitempty" yaml:"gate,omitempty"`
	}
	type doc struct {
		Name     string            `json:"name" yaml:"-"`
		Version  release.Version   `json:"version" yaml:"version"`
		Leaf     leaf              `json:"leaf" yaml:"leaf"`
		List     []*inner          `json:"list" yaml:"list"`
		Map      map[string]inner  `json:"map" yaml:"map"`
		Strings  map[string]string `json:"strings" yaml:"strings"`
		Source   release.Source    `json:"-" yaml:"-"`
		Wrong    string            `json:"wrong" yaml:"Wrong"`
		embedded `json:",inline" yaml:",inline"`
		//lint:ignore U1000 here for the walk to skip
		unexported string
	}
	w := walker{release: true, skip: []string{"Name"}}
	w.walk(reflect.TypeFor[doc](), "")
	assert.Equal(t, []string{"Wrong", "gate", "gate.reason", "leaf", "list[]", "list[].reason", "map{}", "map{}.reason", "strings{}", "version"},
		slices.Sorted(maps.Keys(w.paths)), "release walk")
	assert.Equal(t, []string{`Wrong: json:"wrong" and yaml:"Wrong" name it differently`}, w.mismatch)

	w = walker{}
	w.walk(reflect.TypeFor[doc](), "")
	assert.Equal(t, []string{"gate", "gate.reason", "leaf", "list[]", "list[].reason", "map{}", "map{}.reason", "name", "strings{}", "version", "wrong"},
		slices.Sorted(maps.Keys(w.paths)), "JSON walk")
}

// walker collects the field paths of a type.
type walker struct {
	release  bool     // a release type: YAML names, checked against JSON
	skip     []string // top-level Go field names left out
	paths    map[string]bool
	mismatch []string // fields whose JSON and YAML names differ
	seen     []reflect.Type
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// walk adds the paths under t, a type at prefix ("" at the top).
func (w *walker) walk(t reflect.Type, prefix string) {
	if w.paths == nil {
		w.paths = map[string]bool{}
	}
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
			continue
		case reflect.Slice, reflect.Array:
			prefix += "[]"
			t = t.Elem()
			continue
		case reflect.Map:
			prefix += "{}"
			t = t.Elem()
			continue
		}
		break
	}
	if prefix != "" {
		w.paths[prefix] = true
	}
	if t.Kind() != reflect.Struct || marshals(t) || slices.Contains(w.seen, t) {
		return
	}
	w.seen = append(w.seen, t)
	defer func() { w.seen = w.seen[:len(w.seen)-1] }()
	for i := range t.NumField() {
		f := t.Field(i)
		if (!f.IsExported() && !f.Anonymous) || (prefix == "" && slices.Contains(w.skip, f.Name)) {
			continue
		}
		name, inline := w.name(f, prefix)
		switch {
		case name == "-":
			continue
		case inline:
			w.walk(f.Type, prefix)
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		w.walk(f.Type, p)
	}
}

// name is the field's name in a document, and whether its fields are
// written at the struct's own level (an embedded struct without a name,
// as encoding/json does it; for a release type the YAML tag must say
// ",inline" too).
func (w *walker) name(f reflect.StructField, prefix string) (string, bool) {
	js, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !w.release {
		if js == "" {
			if f.Anonymous {
				return "", true
			}
			js = f.Name
		}
		return js, false
	}
	yml, yopts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	yinline := slices.Contains(strings.Split(yopts, ","), "inline")
	jinline := js == "" && f.Anonymous
	if jinline != yinline || (!jinline && js != yml && js != "-") || (js == "-") != (yml == "-") {
		at := f.Name
		if prefix != "" {
			at = prefix + "." + f.Name
		}
		w.mismatch = append(w.mismatch, at+`: json:"`+f.Tag.Get("json")+`" and yaml:"`+f.Tag.Get("yaml")+`" name it differently`)
	}
	if yinline {
		return "", true
	}
	if yml == "" {
		yml = strings.ToLower(f.Name) // yaml.v3's default
	}
	return yml, false
}

// marshals reports whether values of t encode themselves (a leaf).
func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

// difference is a minus b, sorted.
func difference(a, b map[string]bool) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(a)) {
		if !b[p] {
			out = append(out, p)
		}
	}
	return out
}
