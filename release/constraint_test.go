package release

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// candidates are the versions every constraint case is checked against.
var candidates = []string{
	"v26.03-rc.1", "v26.03", "v26.03.1",
	"v26.06-rc.1", "v26.06-rc.2", "v26.06-rc.3", "v26.06-rc.10", "v26.06", "v26.06.1-rc.1", "v26.06.1",
	"v26.07-rc.1", "v26.07",
	"v26.09-rc.1", "v26.09", "v26.10",
}

func TestConstraintCheck(t *testing.T) {
	tests := []struct {
		name, in string
		admits   []string // exactly these of candidates
	}{
		{
			// DESIGN.md: semver/v3 admits v26.07-rc.1 here.
			name:   "rc range does not admit prereleases of the upper bound",
			in:     ">= v26.06-rc.2, < v26.07",
			admits: []string{"v26.06-rc.2", "v26.06-rc.3", "v26.06-rc.10", "v26.06", "v26.06.1"},
		},
		{
			name:   "every rc of one release and nothing else",
			in:     ">= v26.06-rc.1, < v26.06",
			admits: []string{"v26.06-rc.1", "v26.06-rc.2", "v26.06-rc.3", "v26.06-rc.10"},
		},
		{
			name:   "release range admits no prerelease",
			in:     ">= v26.03",
			admits: []string{"v26.03", "v26.03.1", "v26.06", "v26.06.1", "v26.07", "v26.09", "v26.10"},
		},
		{
			name:   "rc range to a later release",
			in:     ">= v26.06-rc.2, < v26.09",
			admits: []string{"v26.06-rc.2", "v26.06-rc.3", "v26.06-rc.10", "v26.06", "v26.06.1", "v26.07"},
		},
		{
			name:   "upper bound prerelease names its own release only",
			in:     ">= v26.06, < v26.09-rc.2",
			admits: []string{"v26.06", "v26.06.1", "v26.07", "v26.09-rc.1"},
		},
		{
			name:   "rc.2 to rc.3 half open",
			in:     ">= v26.06-rc.1, < v26.06-rc.3",
			admits: []string{"v26.06-rc.1", "v26.06-rc.2"},
		},
		{
			name:   "strict bounds",
			in:     "> v26.06-rc.2, <= v26.06",
			admits: []string{"v26.06-rc.3", "v26.06-rc.10", "v26.06"},
		},
		{name: "exact release", in: "v26.06", admits: []string{"v26.06"}},
		{name: "exact release with =", in: "= v26.06", admits: []string{"v26.06"}},
		{name: "exact release with ==", in: "==26.6.0", admits: []string{"v26.06"}},
		{name: "exact prerelease", in: "v26.06-rc.2", admits: []string{"v26.06-rc.2"}},
		{name: "exact other spelling", in: "26.06.00-rc.02", admits: []string{"v26.06-rc.2"}},
		{name: "exact unknown", in: "v1.0", admits: nil},
		{
			name:   "alternatives",
			in:     "v26.03 || >= v26.06-rc.3, < v26.06 || v26.09",
			admits: []string{"v26.03", "v26.06-rc.3", "v26.06-rc.10", "v26.09"},
		},
		{
			name:   "prerelease rule is per alternative",
			in:     ">= v26.06-rc.1, < v26.06 || >= v26.07",
			admits: []string{"v26.06-rc.1", "v26.06-rc.2", "v26.06-rc.3", "v26.06-rc.10", "v26.07", "v26.09", "v26.10"},
		},
		{
			name:   "star admits every release, no prerelease",
			in:     "*",
			admits: []string{"v26.03", "v26.03.1", "v26.06", "v26.06.1", "v26.07", "v26.09", "v26.10"},
		},
		{name: "star with spaces", in: "  * ", admits: []string{"v26.03", "v26.03.1", "v26.06", "v26.06.1", "v26.07", "v26.09", "v26.10"}},
		{
			name:   "not equal",
			in:     "!= v26.06",
			admits: []string{"v26.03", "v26.03.1", "v26.06.1", "v26.07", "v26.09", "v26.10"},
		},
		{
			name:   "not equal to a prerelease admits the other prereleases of its release",
			in:     ">= v26.06-rc.1, < v26.06, != v26.06-rc.2",
			admits: []string{"v26.06-rc.1", "v26.06-rc.3", "v26.06-rc.10"},
		},
		{name: "less than", in: "< v26.06", admits: []string{"v26.03", "v26.03.1"}},
		{name: "less or equal, no spaces", in: "<=v26.06", admits: []string{"v26.03", "v26.03.1", "v26.06"}},
		{name: "greater than", in: ">v26.07", admits: []string{"v26.09", "v26.10"}},
		{name: "empty range", in: "> v26.09, < v26.06", admits: nil},
		{name: "two-part and three-part bounds", in: ">= 26.6, < 26.06.1", admits: []string{"v26.06"}},
		{name: "patch prerelease named", in: ">= v26.06.1-rc.1, < v26.07", admits: []string{"v26.06.1-rc.1", "v26.06.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConstraint(tt.in)
			require.NoError(t, err, "ParseConstraint(%q)", tt.in)
			var got []string
			for _, s := range candidates {
				if c.Check(MustParseVersion(s)) {
					got = append(got, s)
				}
			}
			assert.Equal(t, tt.admits, got, "versions %q admits", tt.in)
			assert.Equal(t, tt.in, c.String(), "String is the constraint as written")
			assert.False(t, c.IsZero(), "IsZero")
		})
	}
}

func TestConstraintExact(t *testing.T) {
	tests := []struct {
		in    string
		exact string // "" when not exact
	}{
		{"v26.06", "v26.06"},
		{"= v26.06-rc.2", "v26.06-rc.2"},
		{"==26.6.0", "26.6.0"},
		{" v26.06 ", "v26.06"},
		{">= v26.06", ""},
		{"!= v26.06", ""},
		{"v26.06 || v26.09", ""},
		{">= v26.06, <= v26.06", ""},
		{"*", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, ok := MustParseConstraint(tt.in).Exact()
			assert.Equal(t, tt.exact != "", ok, "Exact() ok")
			assert.Equal(t, tt.exact, v.Original(), "Exact() version")
		})
	}
	var zero Constraint
	_, ok := zero.Exact()
	assert.False(t, ok, "zero Constraint is not exact")
}

func TestExactConstraint(t *testing.T) {
	v := MustParseVersion("v26.06-rc.2")
	c := ExactConstraint(v)
	assert.Equal(t, "v26.06-rc.2", c.String())
	assert.Equal(t, "= v26.06-rc.2", c.Normalized())
	got, ok := c.Exact()
	require.True(t, ok)
	assert.Equal(t, v, got)
	assert.True(t, c.Check(MustParseVersion("26.6.0-rc.2")))
	assert.False(t, c.Check(MustParseVersion("v26.06-rc.3")))
	assert.False(t, c.Check(MustParseVersion("v26.06")))
}

func TestConstraintNormalized(t *testing.T) {
	tests := []struct{ in, want string }{
		{"v26.06", "= v26.06"},
		{"==v26.06", "= v26.06"},
		{">=v26.06-rc.2,<v26.09", ">= v26.06-rc.2, < v26.09"},
		{"  >=   v26.06-rc.2 ,   <   v26.09  ", ">= v26.06-rc.2, < v26.09"},
		{"v26.03||>v26.06,!=v26.07", "= v26.03 || > v26.06, != v26.07"},
		{"<= 26.06.01", "<= 26.06.01"},
		{"*", "*"},
		{" * ", "*"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c := MustParseConstraint(tt.in)
			assert.Equal(t, tt.want, c.Normalized())
			again := MustParseConstraint(c.Normalized())
			assert.Equal(t, tt.want, again.Normalized(), "Normalized is a fixed point")
			for _, s := range candidates {
				v := MustParseVersion(s)
				assert.Equal(t, c.Check(v), again.Check(v), "%q and %q disagree on %s", tt.in, c.Normalized(), s)
			}
		})
	}
}

func TestParseConstraintErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `release: empty constraint: write a version (v26.06) or a range (>= v26.06-rc.1, < v26.06)`},
		{"   ", `release: empty constraint: write a version (v26.06) or a range (>= v26.06-rc.1, < v26.06)`},
		{">= v26.06,", `release: invalid constraint ">= v26.06,": empty comparison (a stray "," or "||"?)`},
		{"v26.06 ||", `release: invalid constraint "v26.06 ||": empty comparison (a stray "," or "||"?)`},
		{"|| v26.06", `release: invalid constraint "|| v26.06": empty comparison (a stray "," or "||"?)`},
		{">= v26.06,, < v26.09", `release: invalid constraint ">= v26.06,, < v26.09": empty comparison (a stray "," or "||"?)`},
		{">=", `release: invalid constraint ">=": comparison ">=": invalid version "": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{">= v26.x", `release: invalid constraint ">= v26.x": comparison ">= v26.x": invalid version "v26.x": "x" is not a decimal number`},
		{">= v26.06 < v26.09", `release: invalid constraint ">= v26.06 < v26.09": comparison ">= v26.06 < v26.09" holds more than one version; separate comparisons with "," (>= v26.06, < v26.09) and alternatives with "||"`},
		{"v26.06 v26.09", `release: invalid constraint "v26.06 v26.09": comparison "v26.06 v26.09" holds more than one version; separate comparisons with "," (>= v26.06, < v26.09) and alternatives with "||"`},
		{"~1.2", `release: invalid constraint "~1.2": comparison "~1.2": unknown operator "~"; use =, !=, >, >=, < or <= (a range is two comparisons: >= v1.2, < v1.3)`},
		{"^v26.06", `release: invalid constraint "^v26.06": comparison "^v26.06": unknown operator "^"; use =, !=, >, >=, < or <= (a range is two comparisons: >= v1.2, < v1.3)`},
		{"=> v26.06", `release: invalid constraint "=> v26.06": comparison "=> v26.06": unknown operator "=>"; use =, !=, >, >=, < or <= (a range is two comparisons: >= v1.2, < v1.3)`},
		{"> = v26.06", `release: invalid constraint "> = v26.06": comparison "> = v26.06": unknown operator "> ="; use =, !=, >, >=, < or <= (a range is two comparisons: >= v1.2, < v1.3)`},
		{"v26.06 - v26.09", `release: invalid constraint "v26.06 - v26.09": comparison "v26.06 - v26.09" holds more than one version; separate comparisons with "," (>= v26.06, < v26.09) and alternatives with "||"`},
		{"* || v26.06", `release: invalid constraint "* || v26.06": comparison "*": invalid version "*": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{"v26.06-rc..1", `release: invalid constraint "v26.06-rc..1": comparison "v26.06-rc..1": invalid version "v26.06-rc..1": prerelease: empty identifier in "rc..1"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := ParseConstraint(tt.in)
			require.Error(t, err, "ParseConstraint(%q) = %v, want an error", tt.in, c.Normalized())
			assert.Equal(t, tt.want, err.Error())
			assert.True(t, c.IsZero(), "a failed ParseConstraint returns the zero Constraint")
		})
	}
	assert.Panics(t, func() { MustParseConstraint("~1.2") })
}

func TestZeroConstraint(t *testing.T) {
	var c Constraint
	assert.True(t, c.IsZero())
	assert.Equal(t, "", c.String())
	assert.Equal(t, "", c.Normalized())
	for _, s := range candidates {
		assert.False(t, c.Check(MustParseVersion(s)), "zero Constraint admits %s", s)
	}
}

func TestConstraintJSON(t *testing.T) {
	type doc struct {
		C Constraint `json:"c"`
	}
	in := doc{MustParseConstraint(">= v26.06-rc.2,   < v26.09")}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	assert.Equal(t, `{"c":"\u003e= v26.06-rc.2,   \u003c v26.09"}`, string(b))
	var out doc
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, in, out)

	require.NoError(t, json.Unmarshal([]byte(`{"c":""}`), &out))
	assert.True(t, out.C.IsZero(), `"" decodes to the zero Constraint`)

	assert.EqualError(t, json.Unmarshal([]byte(`{"c":1}`), &out),
		`release: constraint must be a JSON string: json: cannot unmarshal number into Go value of type string`)
	assert.EqualError(t, json.Unmarshal([]byte(`{"c":"~1.2"}`), &out),
		`release: invalid constraint "~1.2": comparison "~1.2": unknown operator "~"; use =, !=, >, >=, < or <= (a range is two comparisons: >= v1.2, < v1.3)`)
}

func TestConstraintYAML(t *testing.T) {
	type doc struct {
		C Constraint `yaml:"c"`
	}
	tests := []struct{ in, want, out string }{
		{`">= v26.06-rc.2, < v26.09"`, ">= v26.06-rc.2, < v26.09", "c: '>= v26.06-rc.2, < v26.09'\n"},
		{`26.10`, "26.10", "c: \"26.10\"\n"}, // unquoted: not the float 26.1
		{`v26.06`, "v26.06", "c: v26.06\n"},
		{`"*"`, "*", "c: '*'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var d doc
			require.NoError(t, yaml.Unmarshal([]byte("c: "+tt.in), &d))
			assert.Equal(t, tt.want, d.C.String())
			b, err := yaml.Marshal(d)
			require.NoError(t, err)
			assert.Equal(t, tt.out, string(b))
			var back doc
			require.NoError(t, yaml.Unmarshal(b, &back))
			assert.Equal(t, d, back)
		})
	}
	var d doc
	assert.EqualError(t, yaml.Unmarshal([]byte("c: [v26.06]"), &d),
		`line 1: release: constraint must be a scalar such as ">= v26.06, < v26.09"`)
	assert.EqualError(t, yaml.Unmarshal([]byte("c: '>= x'"), &d),
		`release: invalid constraint ">= x": comparison ">= x": invalid version "x": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`)

	b, err := MustParseConstraint("v26.06").MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "v26.06", string(b))
}

func TestConstraintAlternatives(t *testing.T) {
	type cmp = Comparison
	v := MustParseVersion
	tests := []struct {
		in   string
		want [][]cmp
	}{
		{"v26.06", [][]cmp{{{Op: "=", Version: v("v26.06")}}}},
		{">= v26.06-rc.1, < v26.06", [][]cmp{{{Op: ">=", Version: v("v26.06-rc.1")}, {Op: "<", Version: v("v26.06")}}}},
		{"v1.0 || > v2.0, != v2.1", [][]cmp{{{Op: "=", Version: v("v1.0")}}, {{Op: ">", Version: v("v2.0")}, {Op: "!=", Version: v("v2.1")}}}},
		{"*", [][]cmp{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := MustParseConstraint(tt.in).Alternatives()
			assert.Equal(t, tt.want, got, "Alternatives(%q)", tt.in)
		})
	}
	assert.Empty(t, Constraint{}.Alternatives(), "the zero Constraint has no alternatives")
	c := MustParseConstraint(">= v1.0")
	c.Alternatives()[0][0].Op = "<"
	assert.True(t, c.Check(v("v1.1")), "Alternatives must return a copy")
}
