package release

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in                  string
		major, minor, patch uint64
		pre                 string
		canonical           string
	}{
		{"v26.06", 26, 6, 0, "", "26.6.0"},
		{"v26.06-rc.2", 26, 6, 0, "rc.2", "26.6.0-rc.2"},
		{"26.06.01", 26, 6, 1, "", "26.6.1"},
		{"13.01.2", 13, 1, 2, "", "13.1.2"},
		{"v1.34.1", 1, 34, 1, "", "1.34.1"},
		{"V1.34.1", 1, 34, 1, "", "1.34.1"},
		{"26.6", 26, 6, 0, "", "26.6.0"},
		{"0.0", 0, 0, 0, "", "0.0.0"},
		{"v1.2.3+build.5", 1, 2, 3, "", "1.2.3"},
		{"v1.2.3-rc.1+build.5.sha-abc", 1, 2, 3, "rc.1", "1.2.3-rc.1"},
		{"v1.2+b-1", 1, 2, 0, "", "1.2.0"},
		{"v26.06-rc.02", 26, 6, 0, "rc.02", "26.6.0-rc.2"},
		{"v26.06-rc02", 26, 6, 0, "rc02", "26.6.0-rc2"},
		{"v26.06-rc.0", 26, 6, 0, "rc.0", "26.6.0-rc.0"},
		{"v26.06-00", 26, 6, 0, "00", "26.6.0-0"},
		{"1.2.3-alpha-1.beta", 1, 2, 3, "alpha-1.beta", "1.2.3-alpha-1.beta"},
		{"1.2.3--", 1, 2, 3, "-", "1.2.3--"},
		{"18446744073709551615.0", 18446744073709551615, 0, 0, "", "18446744073709551615.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := ParseVersion(tt.in)
			require.NoError(t, err, "ParseVersion(%q)", tt.in)
			assert.Equal(t, tt.major, v.Major(), "Major")
			assert.Equal(t, tt.minor, v.Minor(), "Minor")
			assert.Equal(t, tt.patch, v.Patch(), "Patch")
			assert.Equal(t, tt.pre, v.Prerelease(), "Prerelease")
			assert.Equal(t, tt.canonical, v.Canonical(), "Canonical")
			assert.Equal(t, tt.in, v.Original(), "Original keeps the spelling")
			assert.Equal(t, tt.in, v.String(), "String is the original spelling")
			assert.False(t, v.IsZero(), "IsZero")
			assert.Equal(t, v, MustParseVersion(tt.in), "MustParseVersion")
		})
	}
}

func TestParseVersionErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `release: invalid version "": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{"v", `release: invalid version "v": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{"v26", `release: invalid version "v26": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{"1.2.3.4", `release: invalid version "1.2.3.4": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{"-1.2", `release: invalid version "-1.2": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{"v26.x", `release: invalid version "v26.x": "x" is not a decimal number`},
		{"26..1", `release: invalid version "26..1": "" is not a decimal number`},
		{"26.06.", `release: invalid version "26.06.": "" is not a decimal number`},
		{" v26.06", `release: invalid version " v26.06": " v26" is not a decimal number`},
		{"v26.06 ", `release: invalid version "v26.06 ": "06 " is not a decimal number`},
		{"vv26.06", `release: invalid version "vv26.06": "v26" is not a decimal number`},
		{"vV26.06", `release: invalid version "vV26.06": "V26" is not a decimal number`},
		{"+1.2", `release: invalid version "+1.2": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{"1.+2", `release: invalid version "1.+2": "" is not a decimal number`},
		{"18446744073709551616.0", `release: invalid version "18446744073709551616.0": "18446744073709551616" is too large`},
		{"v26.06-", `release: invalid version "v26.06-": prerelease: empty`},
		{"v26.06-rc..1", `release: invalid version "v26.06-rc..1": prerelease: empty identifier in "rc..1"`},
		{"v26.06-rc.", `release: invalid version "v26.06-rc.": prerelease: empty identifier in "rc."`},
		{"v26.06-rc_1", `release: invalid version "v26.06-rc_1": prerelease: identifier "rc_1" may hold only [0-9A-Za-z-]`},
		{"v26.06-rç", `release: invalid version "v26.06-rç": prerelease: identifier "rç" may hold only [0-9A-Za-z-]`},
		{"v26.06+", `release: invalid version "v26.06+": build metadata: empty`},
		{"v26.06+a+b", `release: invalid version "v26.06+a+b": build metadata: identifier "a+b" may hold only [0-9A-Za-z-]`},
		{"v26.06-rc.1+", `release: invalid version "v26.06-rc.1+": build metadata: empty`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := ParseVersion(tt.in)
			require.Error(t, err, "ParseVersion(%q) = %v, want an error", tt.in, v)
			assert.Equal(t, tt.want, err.Error())
			assert.True(t, v.IsZero(), "ParseVersion(%q) returned %#v with its error, want the zero Version", tt.in, v)
		})
	}
}

func TestMustParseVersionPanics(t *testing.T) {
	assert.PanicsWithError(t, `release: invalid version "x": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`,
		func() { MustParseVersion("x") })
}

func TestZeroVersion(t *testing.T) {
	var v Version
	assert.True(t, v.IsZero())
	assert.Equal(t, "", v.String())
	assert.Equal(t, "", v.Original())
	assert.Equal(t, "", v.Canonical())
	// Regression: the zero Version compared equal to 0.0.
	for _, s := range []string{"0.0", "0.0.0", "v0.0.0-0"} {
		w := MustParseVersion(s)
		assert.False(t, v.Equal(w), "zero Version.Equal(%s)", s)
		assert.Equal(t, -1, v.Compare(w), "Compare(zero, %s)", s)
		assert.Equal(t, 1, w.Compare(v), "Compare(%s, zero)", s)
	}
	assert.True(t, v.Equal(Version{}), "the zero Version equals itself")
}

// ascending is the documented order, each element strictly before the next.
var ascending = []string{
	"v1.0.0-1",
	"v1.0.0-2",
	"v1.0.0-10",
	"v1.0.0--x", // alphanumeric identifiers compare as ASCII: "-" < digits < letters
	"v1.0.0-1a",
	"v1.0.0-alpha",
	"v1.0.0-alpha.1",
	"v1.0.0-alpha.beta",
	"v1.0.0-beta",
	"v1.0.0-beta.2",
	"v1.0.0-beta.11",
	"v1.0.0-rc.1",
	"v1.0.0",
	"v13.01.2",
	"v26.03",
	"v26.06-rc.1",
	"v26.06-rc.2",
	"v26.06-rc.3",
	"v26.06-rc.9",
	"v26.06-rc.10",
	"v26.06-rc1", // "rc" < "rc1", as in SemVer
	"v26.06-rc2",
	"v26.06-rc9",
	"v26.06-rc10", // SemVer and Masterminds/semver put rc10 before rc9
	"v26.06",
	"v26.06.1",
	"v26.06.2",
	"v26.06.10",
	"v26.09-rc.1",
	"v26.09",
	"v26.10",
	"v27.0",
}

func TestVersionOrder(t *testing.T) {
	for i, a := range ascending {
		for j, b := range ascending {
			va, vb := MustParseVersion(a), MustParseVersion(b)
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			assert.Equal(t, want, va.Compare(vb), "Compare(%s, %s)", a, b)
			assert.Equal(t, want < 0, va.Less(vb), "Less(%s, %s)", a, b)
			assert.Equal(t, want == 0, va.Equal(vb), "Equal(%s, %s)", a, b)
		}
	}
}

func TestVersionSort(t *testing.T) {
	vs := make([]Version, len(ascending))
	for i, s := range ascending {
		vs[i] = MustParseVersion(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(vs), func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
		slices.SortFunc(vs, Version.Compare)
		got := make([]string, len(vs))
		for i, v := range vs {
			got[i] = v.Original()
		}
		require.Equal(t, ascending, got, "sorted with Version.Compare")
	}
}

// TestVersionIssueOrder is the order issue 2 names, verbatim.
func TestVersionIssueOrder(t *testing.T) {
	chain := []string{"v26.06-rc.2", "v26.06-rc.3", "v26.06-rc.10", "v26.06", "v26.06.1", "v26.09-rc.1"}
	for i := 0; i+1 < len(chain); i++ {
		a, b := MustParseVersion(chain[i]), MustParseVersion(chain[i+1])
		assert.True(t, a.Less(b), "%s < %s", a, b)
		assert.False(t, b.Less(a), "%s < %s", b, a)
	}
}

func TestVersionEqualAfterNormalisation(t *testing.T) {
	groups := [][]string{
		{"v26.06", "26.6.0", "26.06.00", "v26.6", "26.06", "V26.06.0", "v26.06+build.7", "26.6.0+other"},
		{"v26.06-rc.2", "26.6.0-rc.2", "v26.06.00-rc.02", "26.06-rc.2+b"},
		{"v1.0.0-rc1", "1.0-rc01", "v1.0.0-rc001"},
		{"v1.0.0-alpha.0", "1.0.0-alpha.00"},
	}
	for _, g := range groups {
		first := MustParseVersion(g[0])
		for _, s := range g[1:] {
			v := MustParseVersion(s)
			assert.True(t, first.Equal(v), "%s.Equal(%s)", first, v)
			assert.Equal(t, 0, first.Compare(v), "Compare(%s, %s)", first, v)
			assert.Equal(t, 0, v.Compare(first), "Compare(%s, %s)", v, first)
			assert.Equal(t, first.Canonical(), v.Canonical(), "Canonical of %s and %s", first, v)
			assert.Equal(t, s, v.Original(), "Original")
		}
	}
	for _, pair := range [][2]string{
		{"v26.06", "v26.06-rc.1"},
		{"v26.06-rc.1", "v26.06-rc1"},
		{"v26.06-rc.1", "v26.06-rc.1.0"},
		{"v1.0.0-a", "v1.0.0-A"},
		{"v1.0.0-1", "v1.0.0-01a"},
	} {
		a, b := MustParseVersion(pair[0]), MustParseVersion(pair[1])
		assert.False(t, a.Equal(b), "%s.Equal(%s)", a, b)
		assert.NotEqual(t, a.Canonical(), b.Canonical(), "Canonical of %s and %s", a, b)
	}
}

func TestVersionSameCore(t *testing.T) {
	rc := MustParseVersion("v26.06-rc.2")
	assert.True(t, rc.SameCore(MustParseVersion("26.6.0")))
	assert.True(t, rc.SameCore(MustParseVersion("v26.06-rc.9")))
	assert.False(t, rc.SameCore(MustParseVersion("v26.06.1")))
	assert.False(t, rc.SameCore(MustParseVersion("v26.07-rc.2")))
	assert.False(t, rc.SameCore(MustParseVersion("v27.06-rc.2")))
}

func TestVersionJSON(t *testing.T) {
	type doc struct {
		V Version  `json:"v"`
		P *Version `json:"p,omitempty"`
	}
	for _, s := range []string{"v26.06", "26.06.01", "v26.06-rc.2+build.1", "26.10"} {
		t.Run(s, func(t *testing.T) {
			in := doc{V: MustParseVersion(s)}
			b, err := json.Marshal(in)
			require.NoError(t, err)
			assert.Equal(t, `{"v":"`+s+`"}`, string(b))
			var out doc
			require.NoError(t, json.Unmarshal(b, &out))
			assert.Equal(t, in, out)
			assert.Equal(t, s, out.V.Original())
		})
	}
	t.Run("zero", func(t *testing.T) {
		b, err := json.Marshal(doc{})
		require.NoError(t, err)
		assert.Equal(t, `{"v":""}`, string(b))
		out := doc{V: MustParseVersion("v1.0")}
		require.NoError(t, json.Unmarshal(b, &out))
		assert.True(t, out.V.IsZero(), `"" decodes to the zero Version`)
	})
	t.Run("map key", func(t *testing.T) {
		b, err := json.Marshal(map[Version]int{MustParseVersion("v26.06"): 1})
		require.NoError(t, err)
		assert.Equal(t, `{"v26.06":1}`, string(b))
		var m map[Version]int
		require.NoError(t, json.Unmarshal(b, &m))
		assert.Equal(t, map[Version]int{MustParseVersion("v26.06"): 1}, m)
	})
	for _, tt := range []struct{ in, want string }{
		{`{"v":26.06}`, `release: version must be a JSON string: json: cannot unmarshal number into Go value of type string`},
		{`{"v":"v26"}`, `release: invalid version "v26": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
		{`{"v":null}`, ``},
	} {
		var out doc
		err := json.Unmarshal([]byte(tt.in), &out)
		if tt.want == "" {
			assert.NoError(t, err, "json.Unmarshal(%s)", tt.in)
			continue
		}
		assert.EqualError(t, err, tt.want, "json.Unmarshal(%s)", tt.in)
	}
}

func TestVersionYAML(t *testing.T) {
	type doc struct {
		V Version `yaml:"v"`
	}
	tests := []struct {
		in   string // the YAML scalar as written
		want string // Original after decoding
		out  string // yaml.Marshal of the decoded value
	}{
		{"v26.06", "v26.06", "v: v26.06\n"},
		{"26.10", "26.10", "v: \"26.10\"\n"},                  // unquoted: not the float 26.1
		{"26.06", "26.06", "v: \"26.06\"\n"},                  // not 26.06 the float
		{"'26.10'", "26.10", "v: \"26.10\"\n"},                // quoted
		{"26.06.01", "26.06.01", "v: 26.06.01\n"},             // not a float at all
		{"v26.06-rc.2", "v26.06-rc.2", "v: v26.06-rc.2\n"},    //
		{"\"13.01.2\"", "13.01.2", "v: 13.01.2\n"},            //
		{"1.0+b", "1.0+b", "v: 1.0+b\n"},                      //
		{"26.6", "26.6", "v: \"26.6\"\n"},                     //
		{"v1.34.1 # comment", "v1.34.1", "v: v1.34.1\n"},      //
		{"!!str 26.10", "26.10", "v: \"26.10\"\n"},            //
		{"26.10.0-rc.1", "26.10.0-rc.1", "v: 26.10.0-rc.1\n"}, //
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var d doc
			require.NoError(t, yaml.Unmarshal([]byte("v: "+tt.in+"\n"), &d))
			assert.Equal(t, tt.want, d.V.Original())
			b, err := yaml.Marshal(d)
			require.NoError(t, err)
			assert.Equal(t, tt.out, string(b))
			var back doc
			require.NoError(t, yaml.Unmarshal(b, &back))
			assert.Equal(t, d, back, "round trip of %q", b)
		})
	}
	for _, tt := range []struct{ in, want string }{
		{"v: [1, 2]", "line 1: release: version must be a scalar such as v26.06"},
		{"v: {a: 1}", "line 1: release: version must be a scalar such as v26.06"},
		{"v: 26", `release: invalid version "26": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`},
	} {
		var d doc
		assert.EqualError(t, yaml.Unmarshal([]byte(tt.in), &d), tt.want, "yaml.Unmarshal(%q)", tt.in)
	}
}

func TestVersionText(t *testing.T) {
	v := MustParseVersion("v26.06-rc.2")
	b, err := v.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "v26.06-rc.2", string(b))
	var w Version
	require.NoError(t, w.UnmarshalText(b))
	assert.Equal(t, v, w)
	assert.EqualError(t, w.UnmarshalText([]byte("nope")), `release: invalid version "nope": want MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. v26.06 or v1.34.1`)
	assert.Equal(t, v, w, "a failed UnmarshalText leaves the value alone")
}

// ParseVersion of a valid version allocates nothing (the loader parses
// tens of thousands); Canonical allocates only its result.
func TestVersionAllocs(t *testing.T) {
	for _, s := range []string{"v26.06", "v26.06-rc.2", "26.06.01", "v1.34.1", "v26.06-rc.10+build.5", "v1.2.3-rc01.x.007"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseVersion(s) }); n != 0 {
			t.Errorf("ParseVersion(%q): %v allocations, want 0", s, n)
		}
		v := MustParseVersion(s)
		if n := testing.AllocsPerRun(100, func() { _ = v.Canonical() }); n > 1 {
			t.Errorf("%q.Canonical(): %v allocations, want at most 1", s, n)
		}
	}
}
