package release_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// releasesV1V2 is a file of the releases v1.0.0 and v2.0.0, so that a rule
// between them has releases to name.
const releasesV1V2 = header + "kind: Release\nmetadata: {name: v1}\nspec: {version: v1.0.0, components: []}\n---\n" +
	header + "kind: Release\nmetadata: {name: v2}\nspec: {version: v2.0.0, components: []}\n"

// TestLoadAliasDecodedAsAnotherType: an anchored value decoded first as a
// string (a label) and again, through an alias, as a constraint or a
// version was decoded silently the second time: the strict decoder muted
// every problem of an anchored node it had decoded once, whatever type it
// decoded it into. A blocked rule loaded with an empty constraint that
// blocks nothing, and a Release whose version was invalid left the catalog
// with no problem reported. Each type's problems are reported once, at the
// line of the alias, saying where the anchor is.
func TestLoadAliasDecodedAsAnotherType(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{
			"a label's value as a blocked rule's from",
			header + "kind: UpgradePath\nmetadata:\n  name: p\n  labels: {x: &b \">= v1.0.0,, < v2.0.0\"}\nspec:\n  rules:\n  - {from: *b, to: v2.0.0, blocked: data loss}\n",
			[]string{`c.yaml:8: spec.rules[0].from: invalid constraint ">= v1.0.0,, < v2.0.0": empty comparison (a stray "," or "||"?) (the value of alias *b, anchored at line 5)`},
		},
		{
			"a label's value as a release's version",
			header + "kind: Release\nmetadata:\n  name: r\n  labels: {v: &v \"3.0.0.0\"}\nspec:\n  version: *v\n  components: []\n",
			[]string{`c.yaml:7: spec.version: invalid version "3.0.0.0": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1 (the value of alias *v, anchored at line 5)`},
		},
		{
			"a constraint's problem once per type, at the first alias",
			header + "kind: UpgradePath\nmetadata:\n  name: p\n  labels: {x: &b \"v1.0.0 ||\"}\nspec:\n  rules:\n  - {from: *b, to: v2.0.0}\n  - {from: *b, to: v2.0.0}\n",
			[]string{`c.yaml:8: spec.rules[0].from: invalid constraint "v1.0.0 ||": empty comparison (a stray "," or "||"?) (the value of alias *b, anchored at line 5)`},
		},
		{
			"a value valid as both types",
			header + "kind: UpgradePath\nmetadata:\n  name: p\n  labels: {x: &b \"v1.0.0\"}\nspec:\n  rules:\n  - {from: *b, to: v2.0.0}\n",
			nil,
		},
		{
			"an anchored mapping decoded as another struct",
			header + "kind: UpgradePath\nmetadata:\n  name: p\nspec:\n  rules:\n  - from: v1.0.0\n    to: v2.0.0\n    risks: [&k {name: a, message: b}]\n    preChecks: [*k]\n",
			[]string{`c.yaml:10: spec.rules[0].preChecks[0].message: unknown field (the value of alias *k, anchored at line 9); known fields: name, required`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"c.yaml": {Data: []byte(tt.yaml)}, "r.yaml": {Data: []byte(releasesV1V2)}}
			if tt.want == nil {
				_, err := release.Load(fsys)
				require.NoError(t, err)
				return
			}
			got := problemLines(t, fsys)
			assert.Equal(t, tt.want, got, "problems of\n%s", tt.yaml)
		})
	}
}

// TestLoadAliasBlockedRuleBlocks: the rule of the issue, its from written
// validly through an alias of a label: it loads, and blocks.
func TestLoadAliasBlockedRuleBlocks(t *testing.T) {
	c, err := release.Load(fstest.MapFS{"r.yaml": {Data: []byte(releasesV1V2)}, "c.yaml": {Data: []byte(
		header + "kind: UpgradePath\nmetadata:\n  name: p\n  labels: {x: &b \">= v1.0.0, < v2.0.0\"}\nspec:\n  rules:\n  - {from: *b, to: v2.0.0, blocked: data loss}\n")}})
	require.NoError(t, err)
	require.Len(t, c.Paths, 1)
	require.Len(t, c.Paths[0].Rules, 1)
	r := c.Paths[0].Rules[0]
	assert.Equal(t, ">= v1.0.0, < v2.0.0", r.From.String(), "from of the rule")
	assert.True(t, r.From.Check(release.MustParseVersion("v1.0.0")), "from = %q admits v1.0.0", r.From)
}

// aliasedConstraint is an UpgradePath document whose first rule (line 6)
// anchors a from of at least size bytes, a valid range, and whose n rules
// after it (lines 7 on) are aliases of it. It returns the document and the
// length of the anchored value.
func aliasedConstraint(size, n int) ([]byte, int) {
	var c strings.Builder
	for c.Len() < size {
		if c.Len() > 0 {
			c.WriteString(", ")
		}
		c.WriteString(">= v1.0.0")
	}
	var b strings.Builder
	b.WriteString(header + "kind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n")
	b.WriteString("  - {to: v2.0.0, from: &c \"" + c.String() + "\"}\n")
	for range n {
		b.WriteString("  - {from: *c, to: v2.0.0}\n")
	}
	return []byte(b.String()), c.Len()
}

// doublingAliases is a document whose unknown field x (line 4) holds a
// value of size bytes and levels lists, each of two aliases of the one
// before: the aliases bring in size*(2^(levels+1)-2) bytes.
func doublingAliases(size, levels int) []byte {
	var b strings.Builder
	b.WriteString(header + "kind: UpgradePath\nmetadata: {name: p}\nx: [&a0 \"" + strings.Repeat("a", size) + "\"")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, ", &a%d [*a%d, *a%d]", i, i-1, i-1)
	}
	b.WriteString("]\nspec: {rules: [{from: v1.0.0, to: v2.0.0}]}\n")
	return []byte(b.String())
}

// TestLoadAliasBytesLimit: 400 aliases of a 128 KB constraint, a valid
// 142 KB catalog, took 14-18 s and 987 MB to load: each alias parsed the
// constraint again, and the limit on aliases counted them, not what they
// brought in. The aliases of a document may bring in at most 1 MiB of
// values; the problem says by how much they went over, at the alias that
// did.
func TestLoadAliasBytesLimit(t *testing.T) {
	big, bigLen := aliasedConstraint(128<<10, 400)
	under, underLen := aliasedConstraint(1000, 1000)
	require.LessOrEqual(t, 1000*underLen, 1<<20, "the aliases of the case under the limit")
	const unknownX = "c.yaml:4: x: unknown field; known fields: apiVersion, kind, metadata, spec"
	tests := []struct {
		name string
		data []byte
		want []string
	}{
		{
			"400 aliases of a 128 KB constraint",
			big,
			[]string{fmt.Sprintf("c.yaml:%d: aliases bring in %d bytes of values in this document, %d more than the limit of 1048576 (1 MiB); "+
				"write the values out, or alias smaller ones: an alias costs what its value costs each time it is used (the document's own text may be up to 8 MiB)",
				6+(1<<20)/bigLen+1, 400*bigLen, 400*bigLen-(1<<20))},
		},
		{"1000 aliases of a 1 KB constraint, under the limit", under, nil},
		{
			"aliases of aliases, doubling",
			doublingAliases(1000, 10),
			[]string{
				"c.yaml:4: aliases bring in 2046000 bytes of values in this document, 997424 more than the limit of 1048576 (1 MiB); " +
					"write the values out, or alias smaller ones: an alias costs what its value costs each time it is used (the document's own text may be up to 8 MiB)",
				unknownX,
			},
		},
		{
			"aliases of aliases past any size",
			doublingAliases(1, 70),
			[]string{
				"c.yaml:4: aliases of aliases bring in more than 2^62 bytes of values in this document, the limit is 1048576 (1 MiB); " +
					"write the values out, or alias smaller ones: an alias costs what its value costs each time it is used (the document's own text may be up to 8 MiB)",
				unknownX,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"c.yaml": {Data: tt.data}, "r.yaml": {Data: []byte(releasesV1V2)}}
			if tt.want == nil {
				_, err := release.Load(fsys)
				require.NoError(t, err)
				return
			}
			assert.Equal(t, tt.want, problemLines(t, fsys))
		})
	}
}
