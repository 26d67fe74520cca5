package release_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// TestLoadStrict: one document per case, the exact problems it gives.
// testdata/invalid holds the cases the issue lists; these are the rest of
// the strict checker's rules.
func TestLoadStrict(t *testing.T) {
	cv := func(spec string) string {
		return header + "kind: ComponentVersion\nmetadata: {name: a}\nspec:\n  name: a\n  version: v1.0\n" + spec
	}
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{
			"field given twice",
			cv("  handler: a\n  handler: b\n"),
			[]string{"c.yaml:8: spec.handler: field given twice; remove one of them"},
		},
		{
			"map key given twice",
			cv("  handler: a\n  params:\n    x: \"1\"\n    x: \"2\"\n"),
			[]string{"c.yaml:10: spec.params.x: key given twice; remove one of them"},
		},
		{
			"bool that is not true or false",
			header + "kind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n    - {from: v1.0, to: v1.0, preChecks: [{name: a, required: yes}]}\n",
			[]string{
				// The rule's other fields are checked: the catalog has no releases.
				"c.yaml:6: spec.rules[0].from: rule upgrades from v1.0, which has no release; add a Release document for it; or make from a range, which may name versions without releases",
				`c.yaml:6: spec.rules[0].preChecks[0].required: want true or false, got "yes"`,
				"c.yaml:6: spec.rules[0].to: rule upgrades to v1.0, which has no release; add a Release document for it",
			},
		},
		{
			"version as a mapping",
			header + "kind: Release\nmetadata: {name: r}\nspec:\n  version: {major: 26}\n",
			[]string{"c.yaml:5: spec.version: want a single value (a version such as v26.06), got a mapping"},
		},
		{
			"constraint as a list",
			header + "kind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n    - {from: [v1.0, v1.1], to: v1.0}\n",
			[]string{
				// No "rule has no from": from was written, as a list.
				`c.yaml:6: spec.rules[0].from: want a single value (a version or range such as ">= v26.06, < v26.09"), got a list`,
				"c.yaml:6: spec.rules[0].to: rule upgrades to v1.0, which has no release; add a Release document for it",
			},
		},
		{
			"spec as a scalar",
			header + "kind: Release\nmetadata: {name: r}\nspec: v26.06\n",
			[]string{`c.yaml:4: spec: want a mapping, got "v26.06"`},
		},
		{
			"null spec",
			header + "kind: Release\nmetadata: {name: r}\nspec:\n",
			[]string{"c.yaml:4: spec: release has no version; set spec.version, e.g. v26.06"},
		},
		{
			"missing spec",
			header + "kind: Release\nmetadata: {name: r}\n",
			[]string{"c.yaml:1: spec: missing spec; add the Release spec"},
		},
		{
			"missing metadata.name",
			header + "kind: UpgradePath\nmetadata: {labels: {a: b}, annotations: {c: d}}\nspec: {rules: []}\n",
			[]string{
				"c.yaml:1: metadata.name: missing metadata.name; name the document, e.g. metadata: {name: etcd-v3.5.21}",
				"c.yaml:4: spec: the UpgradePath has no rules, and the default track (no spec.track) has no releases: it applies to nothing; add the releases and rules it is for, or remove it",
			},
		},
		{
			"metadata of the wrong shape",
			header + "kind: Release\nmetadata: [r]\nspec: {version: v1.0}\n",
			[]string{"c.yaml:3: metadata: want a mapping, got a list"},
		},
		{
			"document that is not a mapping",
			"- a\n- b\n",
			[]string{"c.yaml:1: a catalog document must be a mapping, got a list; start it with apiVersion: hopdag.io/v1alpha1 and kind: Release, ComponentVersion or UpgradePath"},
		},
		{
			"Kubernetes manifest that no component names",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: y}\n",
			[]string{`c.yaml:1: apiVersion: unknown apiVersion "v1"; catalog documents have apiVersion: hopdag.io/v1alpha1; if this file is a manifest, name it in a ComponentVersion's spec.manifests[].file`},
		},
		{
			"manifest with file and template",
			cv("  manifests:\n    - {file: m.yaml, template: 'kind: ConfigMap'}\n"),
			[]string{"c.yaml:8: spec.manifests[0]: a manifest needs exactly one of file and template; remove template to read the file, or remove file to use the inline template"},
		},
		{
			"negative duration",
			cv("  handler: a\n  timeout: -5m\n"),
			[]string{`c.yaml:8: spec.timeout: invalid duration "-5m": must not be negative`},
		},
		{
			"case of a field name",
			cv("  Handler: a\n"),
			[]string{
				"c.yaml:5: spec: component version has no type; set spec.type to inline, manifest, exec or a registered type",
				`c.yaml:7: spec.Handler: unknown field; did you mean "handler"?`,
			},
		},
		{
			"params written as strings",
			cv("  handler: a\n  params:\n    a: \"false\"\n    b: '3'\n    c: |\n      text\n    d: plain\n    e: !!str 3\n    f: &s \"0\"\n    g: *s\n"),
			nil,
		},
		{
			"param through an alias to a number",
			cv("  handler: a\n  params: {a: &n 3, b: *n}\n"),
			[]string{
				`c.yaml:8: spec.params.a: want a string, got 3, a number; quote it: a: "3"`,
				`c.yaml:8: spec.params.b: want a string, got 3, a number; quote it: b: "3"`,
			},
		},
		{
			"env and labels are strings too",
			header + "kind: ComponentVersion\nmetadata: {name: a, labels: {tier: 1}}\nspec:\n  name: a\n  version: v1.0\n  command: {args: [x], env: {DEBUG: true}}\n",
			[]string{
				`c.yaml:3: metadata.labels.tier: want a string, got 1, a number; quote it: tier: "1"`,
				`c.yaml:7: spec.command.env.DEBUG: want a string, got true, a boolean; quote it: DEBUG: "true"`,
			},
		},
		{
			"retries without attempts is the executor's default",
			cv("  handler: a\n  retries: {backoff: 10s, attempts: }\n"),
			nil,
		},
		{
			"attempts written as 0 in another base",
			cv("  handler: a\n  retries: {attempts: 0x0}\n"),
			[]string{"c.yaml:8: spec.retries.attempts: attempts must be at least 1, got 0x0 (the attempts include the first); set the total number of attempts, e.g. 3, or remove attempts to use the executor's default"},
		},
		{
			"retries as a word",
			cv("  handler: a\n  retries: often\n"),
			[]string{`c.yaml:8: spec.retries: want a mapping, got "often"; write retries: {attempts: 3, backoff: 10s}`},
		},
		{
			"no type, three runners",
			cv("  handler: a\n  command: {args: [x]}\n  manifests: [{template: x}]\n"),
			[]string{"c.yaml:7: spec.type: component version has no type, and handler, command and manifests are all set: which one runs is not clear; set type: inline to use handler, type: exec to use command or type: manifest to use manifests (and remove the others)"},
		},
		{
			"a wrong-typed handler is not also a missing one",
			cv("  type: inline\n  handler: [a]\n"),
			[]string{"c.yaml:8: spec.handler: want a string, got a list"},
		},
		{
			"null values are unset",
			cv("  handler: a\n  group: ~\n  retries: null\n  dependencies:\n"),
			nil,
		},
		{
			"alias to a mapping",
			cv("  handler: a\n  params: &p {a: b}\n  healthChecks: [{name: h, params: *p}]\n"),
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := release.Load(fstest.MapFS{"c.yaml": {Data: []byte(tt.yaml)}})
			if tt.want == nil {
				require.NoError(t, err)
				require.NotNil(t, c)
				return
			}
			require.Error(t, err)
			var le *release.LoadError
			require.ErrorAs(t, err, &le)
			got := make([]string, len(le.Problems))
			for i, p := range le.Problems {
				got[i] = p.Error()
			}
			assert.Equal(t, tt.want, got, "problems of\n%s", tt.yaml)
		})
	}
}

// TestLoadReportsEveryDocument: one file, problems in several documents,
// all reported, in line order.
func TestLoadReportsEveryDocument(t *testing.T) {
	docs := []string{
		header + "kind: Nope\nmetadata: {name: a}\nspec: {}\n",
		header + "kind: Release\nmetadata: {name: r}\nspec: {version: v1, components: []}\n",
		header + "kind: ComponentVersion\nmetadata: {name: c}\nspec: {name: c, version: v1.0, handler: c, dependencies: [c]}\n",
	}
	_, err := release.Load(fstest.MapFS{"c.yaml": {Data: []byte(strings.Join(docs, "---\n"))}})
	require.Error(t, err)
	assert.Equal(t, `release: invalid catalog: 3 problems
  c.yaml:2: kind: unknown kind "Nope"; use Release, ComponentVersion or UpgradePath
  c.yaml:9: spec.version: invalid version "v1": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1
  c.yaml:14: spec.dependencies[0]: component c depends on itself; remove it from spec.dependencies`, err.Error())
}

// A Release or ComponentVersion whose wrong-typed values are not what
// identifies it joins the catalog without them: references to it resolve,
// and its other fields are checked. One whose identity is unusable (a
// Release's track) is left out, and references to it say it is invalid
// instead of calling it missing.
func TestLoadBrokenDocumentsAreNotMissing(t *testing.T) {
	fsys := fstest.MapFS{"a.yaml": {Data: []byte(`apiVersion: hopdag.io/v1alpha1
kind: ComponentVersion
metadata: {name: etcd}
spec: {name: etcd, version: v3.5.0, type: inline, handler: etcd, timeout: 30x, dependencies: [kube]}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: r1}
spec:
  version: v1.0
  components: [{name: etcd, version: v3.5.0}]
  compatibility: [{component: etcd, requires: etcd, versions: "~1.0"}]
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: r0}
spec:
  version: v0.9
  track: [default]
  components: [{name: etcd, version: v3.5.0}]
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: p}
spec:
  rules: [{from: v0.9, to: v1.0}]
`)}}
	_, err := release.Load(fsys)
	require.Error(t, err)
	assert.Equal(t, `release: invalid catalog: 5 problems
  a.yaml:4: spec.timeout: invalid duration "30x": write a number with a unit, e.g. 90s, 5m, 1h30m
  a.yaml:11: spec.components[0]: component etcd v3.5.0 depends on kube, which release v1.0 does not ship; add kube to the release's components, or remove it from the dependencies of etcd v3.5.0 (a.yaml:4)
  a.yaml:12: spec.compatibility[0].versions: invalid constraint "~1.0": comparison "~1.0": unknown operator "~"; use =, !=, >, >=, < or <= (a range is two comparisons: >= v1.2, < v1.3)
  a.yaml:19: spec.track: want a string, got a list
  a.yaml:26: spec.rules[0].from: rule upgrades from v0.9, whose Release (a.yaml:14) is invalid; fix the problems reported there`, err.Error())
}

// problemLines loads files and returns the problems as strings.
func problemLines(t *testing.T, fsys fstest.MapFS) []string {
	t.Helper()
	_, err := release.Load(fsys)
	var le *release.LoadError
	require.ErrorAs(t, err, &le)
	got := make([]string, len(le.Problems))
	for i, p := range le.Problems {
		got[i] = p.Error()
	}
	return got
}

// TestLoadEveryProblemOfADocument: a wrong-typed metadata.labels value hid
// an unknown field and a wrong shape in the spec below it.
func TestLoadEveryProblemOfADocument(t *testing.T) {
	got := problemLines(t, fstest.MapFS{"c.yaml": {Data: []byte(header + `kind: ComponentVersion
metadata:
  name: a
  labels: [not, a, map]
spec:
  name: a
  version: v1.0
  handler: a
  timout: 5m
  dependencies: b
  retries: {attempts: many}
`)}})
	assert.Equal(t, []string{
		"c.yaml:5: metadata.labels: want a mapping, got a list",
		`c.yaml:10: spec.timout: unknown field; did you mean "timeout"?`,
		`c.yaml:11: spec.dependencies: want a list, got "b"; write it as a YAML list (- item)`,
		`c.yaml:12: spec.retries.attempts: want a whole number, got "many"`,
	}, got)
}

// TestLoadSyntaxErrorResync: a syntax error hid every later document of
// its file; checking now resumes at the next "---".
func TestLoadSyntaxErrorResync(t *testing.T) {
	docs := []string{
		doc("ComponentVersion", "a", "  name: a\n  version: v1.0\n  handler: a\n"),
		doc("ComponentVersion", "b", "  name: b\n  version: v1.0\n  handler: [b\n  timeout: 1m\n"),
		doc("ComponentVersion", "c", "  name: c\n  version: v1.0\n  handlr: c\n"),
		doc("ComponentVersion", "d", "  name: d\n\tversion: v1.0\n"),
		doc("Release", "r", "  version: v1.0\n  components: [{name: a, version: v1.0}, {name: c, version: v1.0}]\n"),
	}
	got := problemLines(t, fstest.MapFS{"c.yaml": {Data: []byte(strings.Join(docs, "---\n"))}})
	assert.Equal(t, []string{
		// yaml.v3 says line 16 (0-based) for the flow list opened on line 17.
		"c.yaml:17: invalid YAML: did not find expected ',' or ']'; fix the YAML syntax",
		"c.yaml:25: spec: component version has no type; set spec.type to inline, manifest, exec or a registered type",
		`c.yaml:27: spec.handlr: unknown field; did you mean "handler"?`,
		"c.yaml:34: invalid YAML: found a tab character that violates indentation; fix the YAML syntax",
	}, got)
}

// TestLoadBinaryDocument: binary data in one document is reported with
// its byte offset; the other documents are still checked.
func TestLoadBinaryDocument(t *testing.T) {
	data := doc("ComponentVersion", "a", "  name: a\n  version: v1.0\n  handler: a\n  group: \x00\n") + "---\n" +
		doc("ComponentVersion", "b", "  name: b\n  version: v1.0\n  handlr: b\n")
	got := problemLines(t, fstest.MapFS{"c.yaml": {Data: []byte(data)}})
	assert.Equal(t, []string{
		"c.yaml:9: not YAML (binary data at byte 128); a catalog file is UTF-8 text; remove the file or the bytes, or give the file another extension",
		"c.yaml:16: spec: component version has no type; set spec.type to inline, manifest, exec or a registered type",
		`c.yaml:18: spec.handlr: unknown field; did you mean "handler"?`,
	}, got)
}

// TestLoadDocumentBeforeSyntaxError: a syntax error at the start of a
// document does not cost the document before it (yaml.v3 reads ahead into
// the next document before it returns one).
func TestLoadDocumentBeforeSyntaxError(t *testing.T) {
	data := doc("ComponentVersion", "a", "  name: a\n  version: v1.0\n  handlr: a\n") + "--- \"\n"
	got := problemLines(t, fstest.MapFS{"c.yaml": {Data: []byte(data)}})
	assert.Equal(t, []string{
		"c.yaml:6: spec: component version has no type; set spec.type to inline, manifest, exec or a registered type",
		`c.yaml:8: spec.handlr: unknown field; did you mean "handler"?`,
		"c.yaml:10: invalid YAML: found unexpected end of stream; fix the YAML syntax",
	}, got)
}

// TestLoadMergeKeys: YAML merge keys were refused as an unknown field.
// A key of the mapping overrides a merged one; of several merged mappings
// the first wins.
func TestLoadMergeKeys(t *testing.T) {
	data := doc("ComponentVersion", "a", `  name: a
  version: v1.0
  <<: &defaults
    handler: default
    timeout: 5m
    retries: &retries {attempts: 3, backoff: 10s}
  handler: a
`) + "---\n" + doc("ComponentVersion", "b", `  name: b
  version: v1.0
  handler: b
  retries:
    <<: [{attempts: 5}, &retries {attempts: 3, backoff: 10s}]
    maxBackoff: 1m
  params:
    <<: {x: "1", y: "2"}
    y: "3"
`)
	c, err := release.Load(fstest.MapFS{"c.yaml": {Data: []byte(data)}})
	require.NoError(t, err)
	a, _ := c.Component("a", v("v1.0"))
	assert.Equal(t, "a", a.Handler, "a key of the mapping overrides a merged one")
	assert.Equal(t, release.D(5*time.Minute), a.Timeout)
	assert.Equal(t, &release.Retries{Attempts: 3, Backoff: release.D(10 * time.Second)}, a.Retries)
	b, _ := c.Component("b", v("v1.0"))
	assert.Equal(t, &release.Retries{Attempts: 5, Backoff: release.D(10 * time.Second), MaxBackoff: release.D(time.Minute)}, b.Retries, "the first merged mapping wins")
	assert.Equal(t, map[string]string{"x": "1", "y": "3"}, b.Params)

	got := problemLines(t, fstest.MapFS{"c.yaml": {Data: []byte(doc("ComponentVersion", "a", "  name: a\n  version: v1.0\n  handler: a\n  params:\n    <<: [x]\n  retries: &r\n    <<: *r\n"))}})
	assert.Equal(t, []string{
		`c.yaml:10: spec.params: a merge key (<<) must name a mapping or a list of mappings, got "x"; write <<: *anchor, or <<: [*a, *b], where the anchors name mappings`,
		"c.yaml:12: spec.retries: a merge key (<<) names a mapping it is part of; merge a mapping defined outside this one",
	}, got)

	// An anchor belongs to its document (YAML 1.2, 3.2.2.2), whichever
	// piece of the file the documents are parsed in.
	got = problemLines(t, fstest.MapFS{"c.yaml": {Data: []byte(doc("ComponentVersion", "a", "  name: a\n  version: v1.0\n  handler: a\n  retries: &r {attempts: 3}\n") +
		"---\n" + doc("ComponentVersion", "b", "  name: b\n  version: v1.0\n  handler: b\n  retries: *r\n"))}})
	assert.Equal(t, []string{
		"c.yaml:19: invalid YAML: unknown anchor 'r' referenced; define the anchor (&name) before the alias (*name) in the same document: an anchor does not carry over to the documents after it",
	}, got)
}
