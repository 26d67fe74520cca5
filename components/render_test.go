package components_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n"

func TestRenderTemplateData(t *testing.T) {
	from := manifestCV("app", "v1.0.0", configMap)
	to := manifestCV("app", "v1.1.0-rc.1", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Component.Name }}-{{ .Component.Params.suffix }}
data:
  version: "{{ .Component.Version }}"
  from: "{{ .From }}"
  hop: "{{ .Hop }}"
  registry: "{{ .Values.registry }}"
  mirrors: "{{ range .Values.mirrors }}{{ . }};{{ end }}"
`)
	to.Params = map[string]string{"suffix": "config"}
	m := components.NewManifest(components.NewRecorder(), components.WithValues(map[string]any{
		"registry": "mirror.local", "mirrors": []string{"a", "b"},
	}))

	tests := []struct {
		name string
		task runner.Task
		want string
	}{
		{"upgrade", task(from, to, hop("v26.06-rc.2", "v26.06-rc.3")),
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  version: \"v1.1.0-rc.1\"\n  from: \"v1.0.0\"\n  hop: \"v26.06-rc.2 -> v26.06-rc.3\"\n  registry: \"mirror.local\"\n  mirrors: \"a;b;\"\n"},
		{"new component, no hop", task(nil, to, nil),
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  version: \"v1.1.0-rc.1\"\n  from: \"\"\n  hop: \"\"\n  registry: \"mirror.local\"\n  mirrors: \"a;b;\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := m.Render(tt.task)
			require.NoError(t, err)
			require.Len(t, objs, 1)
			o := objs[0]
			assert.Equal(t, tt.want, o.YAML)
			assert.Equal(t, components.Object{
				APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "app-config",
				Component: "app", Version: "v1.1.0-rc.1", Manifest: "m1.yaml", Doc: 1,
				Content: o.Content, YAML: o.YAML,
			}, o)
			assert.Equal(t, "a;b;", o.Content["data"].(map[string]any)["mirrors"])
		})
	}
}

func TestRenderTemplateErrors(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		cv     *release.ComponentVersion
		is     error
		msg    string
	}{
		{
			name: "does not parse",
			cv:   manifestCV("app", "v1.0.0", "kind: {{ .Component.Name "),
			is:   components.ErrTemplate,
			msg:  "components: app v1.0.0: render: bad template: template: m1.yaml:1: unclosed action",
		},
		{
			name: "missing value",
			cv:   manifestCV("app", "v1.0.0", "image: {{ .Values.registry }}/app\n"),
			is:   components.ErrTemplate,
			msg:  `components: app v1.0.0: render: bad template: template: m1.yaml:1:17: executing "m1.yaml" at <.Values.registry>: map has no entry for key "registry"`,
		},
		{
			name:   "missing value among others",
			values: map[string]any{"other": 1},
			cv:     manifestCV("app", "v1.0.0", "image: {{ .Values.registry }}/app\n"),
			is:     components.ErrTemplate,
			msg:    `components: app v1.0.0: render: bad template: template: m1.yaml:1:17: executing "m1.yaml" at <.Values.registry>: map has no entry for key "registry"`,
		},
		{
			name: "missing param",
			cv:   manifestCV("app", "v1.0.0", "image: {{ .Component.Params.image }}\n"),
			is:   components.ErrTemplate,
			msg:  `components: app v1.0.0: render: bad template: template: m1.yaml:1:20: executing "m1.yaml" at <.Component.Params.image>: map has no entry for key "image"`,
		},
		{
			name: "unknown field",
			cv:   manifestCV("app", "v1.0.0", "image: {{ .Component.Image }}\n"),
			is:   components.ErrTemplate,
			msg:  `components: app v1.0.0: render: bad template: template: m1.yaml:1:20: executing "m1.yaml" at <.Component.Image>: can't evaluate field Image in type components.componentData`,
		},
		{
			name: "every manifest is reported",
			cv:   manifestCV("app", "v1.0.0", "{{ .Nope }}", configMap, "{{ end }}"),
			is:   components.ErrTemplate,
			msg: "components: app v1.0.0: render: 2 problems:\n" +
				"\tbad template: template: m1.yaml:1:3: executing \"m1.yaml\" at <.Nope>: can't evaluate field Nope in type components.templateData\n" +
				"\tbad template: template: m3.yaml:1: unexpected {{end}}",
		},
		{
			name: "empty template",
			cv:   manifestCV("app", "v1.0.0", ""),
			is:   components.ErrTemplate,
			msg:  "components: app v1.0.0: render: bad template: manifest m1.yaml has no template text (release.Load reads manifest files into Template; a ComponentVersion built in code must set it)",
		},
		{
			name: "no manifests",
			cv:   manifestCV("app", "v1.0.0"),
			is:   components.ErrNoManifests,
			msg:  "components: app v1.0.0: render: component has no manifests",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := components.NewManifest(components.NewRecorder(), components.WithValues(tt.values))
			_, err := m.Render(task(nil, tt.cv, nil))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.is)
			assert.True(t, runner.IsPermanent(err), "a template error is not retried")
			assert.EqualError(t, err, tt.msg)
			assert.EqualError(t, m.Validate(tt.cv), tt.msg[:len("components: app v1.0.0: ")]+"validate"+tt.msg[len("components: app v1.0.0: render"):],
				"Validate reports the same problems at plan time")
		})
	}
}

func TestRenderDocumentErrors(t *testing.T) {
	tests := []struct {
		name string
		tpl  []string
		msg  string
		docs []components.DocumentError // Manifest, Doc and Line of each problem
	}{
		{
			name: "bad YAML",
			tpl:  []string{configMap + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: b\n"},
			msg:  "components: app v1.0.0: render: m1.yaml:7: document 2: yaml: line 8: did not find expected ',' or '}'",
			docs: []components.DocumentError{{Manifest: "m1.yaml", Doc: 2, Line: 7}},
		},
		{
			name: "missing fields, every document reported",
			tpl: []string{
				configMap + "---\nkind: Secret\nmetadata:\n  name: b\n---\n# a comment only\n---\napiVersion: v1\nkind: Secret\nmetadata: {}\n",
				"data: {}\n",
			},
			msg: "components: app v1.0.0: render: 3 problems:\n" +
				"\tm1.yaml:7: document 2: missing apiVersion\n" +
				"\tm1.yaml:13: document 3: missing metadata.name\n" +
				"\tm2.yaml:1: document 1: missing apiVersion, kind, metadata.name",
			docs: []components.DocumentError{{Manifest: "m1.yaml", Doc: 2, Line: 7}, {Manifest: "m1.yaml", Doc: 3, Line: 13}, {Manifest: "m2.yaml", Doc: 1, Line: 1}},
		},
		{
			name: "wrong types",
			tpl:  []string{"apiVersion: v1\nkind: [a]\nmetadata:\n  name: 12\n  namespace: {a: b}\n"},
			msg:  "components: app v1.0.0: render: m1.yaml:1: document 1: kind must be a string, not []interface {}; metadata.name must be a string, not int; metadata.namespace must be a string, not map[string]interface {}",
			docs: []components.DocumentError{{Manifest: "m1.yaml", Doc: 1, Line: 1}},
		},
		{
			name: "metadata not a mapping",
			tpl:  []string{"apiVersion: v1\nkind: A\nmetadata: x\n"},
			msg:  "components: app v1.0.0: render: m1.yaml:1: document 1: metadata must be a mapping, not string",
			docs: []components.DocumentError{{Manifest: "m1.yaml", Doc: 1, Line: 1}},
		},
		{
			name: "not a mapping",
			tpl:  []string{"\n\n- a\n- b\n---\njust text\n"},
			msg: "components: app v1.0.0: render: 2 problems:\n" +
				"\tm1.yaml:3: document 1: not an object: the document is a sequence, want a mapping with apiVersion, kind and metadata.name\n" +
				"\tm1.yaml:6: document 2: not an object: the document is a scalar (str), want a mapping with apiVersion, kind and metadata.name",
			docs: []components.DocumentError{{Manifest: "m1.yaml", Doc: 1, Line: 3}, {Manifest: "m1.yaml", Doc: 2, Line: 6}},
		},
		{
			name: "two documents without a separator line",
			tpl:  []string{configMap + "--- !!map\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n"},
			msg:  "components: app v1.0.0: render: m1.yaml:1: document 1: holds more than one document; put each on its own after a line with only ---",
			docs: []components.DocumentError{{Manifest: "m1.yaml", Doc: 1, Line: 1}},
		},
		{
			name: "an object rendered twice",
			tpl:  []string{configMap, "# again\n" + configMap},
			msg:  "components: app v1.0.0: render: m2.yaml:2: document 1: ConfigMap ns/a is rendered twice (also m1.yaml document 1)",
			docs: []components.DocumentError{{Manifest: "m2.yaml", Doc: 1, Line: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := components.NewManifest(components.NewRecorder())
			_, err := m.Render(task(nil, manifestCV("app", "v1.0.0", tt.tpl...), nil))
			require.Error(t, err)
			assert.ErrorIs(t, err, components.ErrInvalidManifest)
			assert.True(t, runner.IsPermanent(err))
			assert.EqualError(t, err, tt.msg)
			var got []components.DocumentError
			collectDocErrors(err, &got)
			require.Len(t, got, len(tt.docs))
			for i, d := range tt.docs {
				assert.Equal(t, d, components.DocumentError{Manifest: got[i].Manifest, Doc: got[i].Doc, Line: got[i].Line}, "problem %d", i)
			}
		})
	}
}

// collectDocErrors gathers every *DocumentError in err's tree, depth first.
func collectDocErrors(err error, out *[]components.DocumentError) {
	if d, ok := err.(*components.DocumentError); ok {
		*out = append(*out, *d)
		return
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			collectDocErrors(e, out)
		}
	case interface{ Unwrap() error }:
		collectDocErrors(u.Unwrap(), out)
	}
}

func TestRenderSplitting(t *testing.T) {
	tests := []struct {
		name  string
		tpl   string
		want  []string // String() of the objects
		yamls []string // their YAML, when checked
	}{
		{"leading separator and empty documents", "---\n\n---\n" + configMap + "---\n---   # trailing comment\n", []string{"ConfigMap ns/a"}, []string{configMap}},
		{"comment-only and null documents are left out", "# header\n---\n" + configMap + "---\n~\n---\nnull\n", []string{"ConfigMap ns/a"}, nil},
		{"CRLF line ends", "apiVersion: v1\r\nkind: A\r\nmetadata:\r\n  name: x\r\n---\r\napiVersion: v1\r\nkind: B\r\nmetadata:\r\n  name: y\r\n", []string{"A default/x", "B default/y"}, nil},
		{"--- inside a block scalar is content", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  doc: |\n    ---\n    a: b\n", []string{"ConfigMap default/c"},
			[]string{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  doc: |\n    ---\n    a: b\n"}},
		{"no newline at the end", "apiVersion: v1\nkind: A\nmetadata: {name: x}", []string{"A default/x"}, []string{"apiVersion: v1\nkind: A\nmetadata: {name: x}\n"}},
		{"a separator glued to text is not one", "apiVersion: v1\nkind: A\nmetadata:\n  name: x\n  annotations:\n    a: \"---x\"\n", []string{"A default/x"}, nil},
		{"nothing at all", "# only a comment\n", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := components.NewManifest(components.NewRecorder())
			objs, err := m.Render(task(nil, manifestCV("app", "v1.0.0", tt.tpl), nil))
			require.NoError(t, err)
			assert.Equal(t, tt.want, names(objs))
			if tt.yamls != nil {
				var got []string
				for _, o := range objs {
					got = append(got, o.YAML)
				}
				assert.Equal(t, tt.yamls, got)
			}
			for i, o := range objs {
				assert.Equal(t, i+1, o.Doc, "documents count from 1, empty ones left out")
			}
		})
	}
}

func TestRenderOrder(t *testing.T) {
	obj := func(kind, name string) string {
		apiVersion := "v1"
		if kind == "CustomResourceDefinition" {
			apiVersion = "apiextensions.k8s.io/v1"
		}
		return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n---\n"
	}
	cv := manifestCV("app", "v1.0.0",
		obj("ServiceAccount", "sa")+obj("CustomResourceDefinition", "foos.example.com")+obj("Deployment", "d1"),
		obj("Namespace", "ns1")+obj("Foo", "f")+obj("CustomResourceDefinition", "bars.example.com")+obj("Namespace", "ns2")+obj("ConfigMap", "cm"),
	)
	objs, err := components.NewManifest(components.NewRecorder()).Render(task(nil, cv, nil))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"Namespace ns1", "Namespace ns2",
		"CustomResourceDefinition foos.example.com", "CustomResourceDefinition bars.example.com",
		"ServiceAccount default/sa", "Deployment default/d1", "Foo default/f", "ConfigMap default/cm",
	}, names(objs), "Namespaces, then CRDs, then the rest, each in declared order")
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&components.Error{Component: "a", Version: "v1", Op: "apply", Err: errors.New("x")}, "components: a v1: apply: x"},
		{&components.Error{Component: "a", Version: "v1", Op: "apply", Err: errors.New("apply ConfigMap ns/cm: refused")}, "components: a v1: apply ConfigMap ns/cm: refused"},
		{&components.Error{Component: "a", Version: "v1", Op: "apply", Err: errors.New("applying: x")}, "components: a v1: apply: applying: x"},
		{&components.Error{Component: "a", Err: components.ErrNoCommand}, "components: a: component has no command"},
		{&components.NotRegisteredError{Kind: "type", Name: "t"}, `components: no runner registered for component type "t" (none registered)`},
		{&components.DocumentError{Manifest: "m", Doc: 2, Err: errors.New("x")}, "components: m: document 2: x"},
		{&components.NotReadyError{Check: "c", Timeout: 1e9, Polls: 3}, "components: health check c not ready after 1s (3 polls)"},
		{&components.ExitError{Program: "p", Code: 2}, "components: p: exit code 2"},
		{&components.ExitError{Program: "p", Code: -1, Signal: "killed"}, "components: p: killed by signal killed"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.EqualError(t, tt.err, tt.want)
		})
	}
}

func TestRenderManifestNames(t *testing.T) {
	cv := manifestCV("app", "v1.0.0", configMap, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", "apiVersion: v1\nkind: Service\nmetadata: {name: v}\n")
	cv.Manifests[0].Name = "named"
	cv.Manifests[1].Name, cv.Manifests[1].File = "", "manifests/secret.yaml"
	cv.Manifests[2].Name = ""
	objs, err := components.NewManifest(components.NewRecorder()).Render(task(nil, cv, nil))
	require.NoError(t, err)
	var got []string
	for _, o := range objs {
		got = append(got, o.Manifest)
	}
	assert.Equal(t, []string{"named", "manifests/secret.yaml", "inline-2"}, got, "name, else file, else inline-N as release.Load names them")
}

// TestRenderValuesSafely shows a value holding ": " and a newline rendered
// safely with sprig's quote and with toYaml, and a nil value refused as a
// missing one is.
func TestRenderValuesSafely(t *testing.T) {
	evil := "a: b\nkind: Secret"
	values := map[string]any{"evil": evil, "list": []any{"x: 1", "y\nz"}, "none": nil, "nested": map[string]any{"off": nil}}
	tests := []struct {
		name    string
		tpl     string
		want    map[string]any // data of the ConfigMap
		wantErr string
	}{
		{name: "quote", tpl: "data:\n  v: {{ .Values.evil | quote }}\n", want: map[string]any{"v": evil}},
		{name: "toYaml", tpl: "data:\n  v: |\n{{ .Values.evil | toYaml | indent 4 }}\n", want: map[string]any{"v": "|-\n  a: b\n  kind: Secret\n"}},
		{name: "toYaml of a list", tpl: "data:\n  v: {{ .Values.list | toJson | quote }}\n", want: map[string]any{"v": `["x: 1","y\nz"]`}},
		{name: "default of a nil value", tpl: "data:\n  v: {{ .Values.none | default \"fallback\" | quote }}\n", want: map[string]any{"v": "fallback"}},
		{name: "a nil value is an error", tpl: "data:\n  v: \"{{ .Values.none }}\"\n",
			wantErr: "a nil value is rendered (null in YAML, nil in Go; nil values: .Values.nested.off, .Values.none); set it, or give a default with `| default`"},
		{name: "required", tpl: "data:\n  v: {{ required \"set .Values.none\" .Values.none }}\n", wantErr: "set .Values.none"},
		{name: "env is not there", tpl: "data:\n  v: {{ env \"HOME\" }}\n", wantErr: `function "env" not defined`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := components.NewManifest(components.NewRecorder(), components.WithValues(values))
			objs, err := m.Render(task(nil, manifestCV("app", "v1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\n"+tt.tpl), nil))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, components.ErrTemplate)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, objs, 1, "the value injected no document or key")
			assert.Equal(t, tt.want, objs[0].Content["data"])
			assert.Equal(t, []string{"apiVersion", "data", "kind", "metadata"}, slices.Sorted(maps.Keys(objs[0].Content)), "no key injected")
		})
	}
}

func TestRenderText(t *testing.T) {
	to := manifestCV("web", "v2.0")
	to.Params = map[string]string{"replicas": "3"}
	tk := task(manifestCV("web", "v1.0"), to, hop("v26.06", "v26.09"))
	got, err := components.RenderText("values", "image: {{ .Values.registry | quote }}\nfrom: {{ .From }}\nhop: {{ .Hop }}\nreplicas: {{ .Component.Params.replicas }}\n", tk, map[string]any{"registry": "mirror.local: 5000"})
	require.NoError(t, err)
	assert.Equal(t, "image: \"mirror.local: 5000\"\nfrom: v1.0\nhop: v26.06 -> v26.09\nreplicas: 3\n", got)
	_, err = components.RenderText("values", "{{ .Values.missing }}", tk, nil)
	assert.ErrorIs(t, err, components.ErrTemplate)
	assert.ErrorContains(t, err, "missing")
}
