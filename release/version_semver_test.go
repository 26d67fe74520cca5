package release

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Differential tests against Masterminds/semver/v3 (DESIGN.md): Version.Compare
// must agree with semver's Compare on every pair except where the documented
// deviation applies (deviates: letters followed by digits, rc9 < rc10).

// genVersion writes a random version in the shapes users write.
func genVersion(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteByte('v')
	}
	num := func() string {
		// Small numbers collide often, which is what exercises equality.
		n := r.IntN(4)
		if r.IntN(8) == 0 {
			n = r.IntN(1 << 20)
		}
		return fmt.Sprint(n)
	}
	core := func() string {
		if r.IntN(4) == 0 {
			return "0" + num() // 26.06: leading zeros are legal in the core
		}
		return num()
	}
	b.WriteString(core())
	b.WriteByte('.')
	b.WriteString(core())
	if r.IntN(2) == 0 {
		b.WriteByte('.')
		b.WriteString(core())
	}
	if r.IntN(3) > 0 {
		words := []string{"rc", "alpha", "beta", "a", "b", "RC", "pre-release", "-", "x-y",
			"e01f3a9", "e1f03a9", "a1b", "a10", "rc-1", "rc1", "rc01", "rc9", "rc10", "rc1a", "1a", "dev"}
		for i := range 1 + r.IntN(3) {
			if i == 0 {
				b.WriteByte('-')
			} else {
				b.WriteByte('.')
			}
			if r.IntN(2) == 0 {
				b.WriteString(words[r.IntN(len(words))])
			} else {
				b.WriteString(num())
			}
		}
	}
	if r.IntN(5) == 0 {
		b.WriteString("+build.")
		b.WriteString(num())
	}
	return b.String()
}

// deviates reports whether the documented deviation may decide the order of
// a and b: some prerelease identifier of one is letters followed by digits
// (rc10) and the other has, at the same position, an identifier starting with
// the same letters and a digit.
func deviates(a, b Version) bool {
	xs, ys := strings.Split(a.Prerelease(), "."), strings.Split(b.Prerelease(), ".")
	for i := range min(len(xs), len(ys)) {
		x, y := xs[i], ys[i]
		if xl, _, ok := splitLD(x); ok && digitAfter(y, xl) {
			return true
		}
		if yl, _, ok := splitLD(y); ok && digitAfter(x, yl) {
			return true
		}
		if x != y {
			return false
		}
	}
	return false
}

func semverCompare(a, b string) (int, bool) {
	sa, err := semver.NewVersion(a)
	if err != nil {
		return 0, false
	}
	sb, err := semver.NewVersion(b)
	if err != nil {
		return 0, false
	}
	return sa.Compare(sb), true
}

func TestCompareAgreesWithSemver(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 6))
	compared := 0
	for range 50_000 {
		a, b := genVersion(r), genVersion(r)
		va, err := ParseVersion(a)
		require.NoError(t, err, "ParseVersion(%q)", a)
		vb, err := ParseVersion(b)
		require.NoError(t, err, "ParseVersion(%q)", b)
		want, ok := semverCompare(a, b)
		if !ok || deviates(va, vb) {
			continue
		}
		compared++
		if got := va.Compare(vb); got != want {
			t.Fatalf("Compare(%s, %s) = %d, semver says %d", a, b, got, want)
		}
	}
	// The generator is meant to produce versions semver accepts.
	require.Greater(t, compared, 35_000, "pairs that semver also parsed")
}

// TestCompareTotal checks that the order, deviation included, is a total
// order: antisymmetric and transitive on random triples.
func TestCompareTotal(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	for range 30_000 {
		vs := [3]Version{}
		for i := range vs {
			vs[i] = MustParseVersion(genVersion(r))
		}
		a, b, c := vs[0], vs[1], vs[2]
		require.Equal(t, -a.Compare(b), b.Compare(a), "Compare(%s, %s) is not antisymmetric", a, b)
		require.Equal(t, a.Compare(b) == 0, a.Canonical() == b.Canonical(), "Compare(%s, %s) = %d but Canonical %q, %q", a, b, a.Compare(b), a.Canonical(), b.Canonical())
		if a.Compare(b) <= 0 && b.Compare(c) <= 0 {
			require.LessOrEqual(t, a.Compare(c), 0, "%s <= %s <= %s but Compare(%s, %s) > 0", a, b, c, a, c)
		}
	}
}

// FuzzCompareSemver is the same property on arbitrary strings.
func FuzzCompareSemver(f *testing.F) {
	for _, s := range ascending {
		f.Add(s, "v26.06")
	}
	f.Add("v26.06-rc.9", "v26.06-rc.10")
	f.Add("1.0.0-alpha.beta", "1.0.0-alpha.1")
	f.Fuzz(func(t *testing.T, a, b string) {
		va, err := ParseVersion(a)
		if err != nil {
			return
		}
		vb, err := ParseVersion(b)
		if err != nil || deviates(va, vb) {
			return
		}
		want, ok := semverCompare(a, b)
		if !ok {
			return
		}
		if got := va.Compare(vb); got != want {
			t.Fatalf("Compare(%q, %q) = %d, semver says %d", a, b, got, want)
		}
	})
}

// TestSemverDifferences pins the places where Version deliberately departs
// from Masterminds/semver, listed in DESIGN.md. If semver changes, these
// notes (and maybe Version) need another look.
func TestSemverDifferences(t *testing.T) {
	sv := func(s string) *semver.Version {
		v, err := semver.NewVersion(s)
		require.NoError(t, err, "semver.NewVersion(%q)", s)
		return v
	}
	t.Run("rc9 and rc10", func(t *testing.T) {
		assert.Equal(t, 1, sv("v26.06-rc9").Compare(sv("v26.06-rc10")), "semver: rc9 > rc10 (text)")
		assert.Equal(t, -1, MustParseVersion("v26.06-rc9").Compare(MustParseVersion("v26.06-rc10")), "Version: rc9 < rc10")
		assert.Equal(t, -1, sv("v26.06-rc.9").Compare(sv("v26.06-rc.10")), "semver: rc.9 < rc.10")
	})
	t.Run("only letters then digits deviate", func(t *testing.T) {
		// Regressions: run-wise comparison used to apply to every
		// alphanumeric identifier.
		for _, tt := range []struct{ a, b string }{
			{"v1.0.0-dev.e01f3a9", "v1.0.0-dev.e1f03a9"}, // were equal
			{"v1.0.0-rc-1", "v1.0.0-rc1"},                // were ordered rc1 < rc-1
			{"v1.0.0-a10", "v1.0.0-a1b"},                 // were ordered a1b < a10
			{"v1.0.0-1a", "v1.0.0-01a"},
		} {
			want, ok := semverCompare(tt.a, tt.b)
			require.True(t, ok, "semver parses %s and %s", tt.a, tt.b)
			require.NotZero(t, want, "semver: %s != %s", tt.a, tt.b)
			a, b := MustParseVersion(tt.a), MustParseVersion(tt.b)
			assert.Equal(t, want, a.Compare(b), "Compare(%s, %s), semver says %d", a, b, want)
			assert.Equal(t, -want, b.Compare(a), "Compare(%s, %s)", b, a)
			assert.False(t, a.Equal(b), "%s.Equal(%s)", a, b)
			assert.NotEqual(t, a.Canonical(), b.Canonical(), "Canonical of %s and %s", a, b)
		}
		// The deviation stays total: rc9 < rc10 < rc1a.
		assert.Equal(t, -1, MustParseVersion("v1.0-rc9").Compare(MustParseVersion("1.0-rc10")))
		assert.Equal(t, -1, MustParseVersion("v1.0-rc10").Compare(MustParseVersion("1.0-rc1a")))
		assert.Equal(t, -1, MustParseVersion("v1.0-rc9").Compare(MustParseVersion("1.0-rc1a")))
	})
	t.Run("spelling", func(t *testing.T) {
		assert.Equal(t, "26.6.0", sv("v26.06").String(), "semver normalises the spelling away")
		assert.Equal(t, "v26.06", MustParseVersion("v26.06").String(), "Version keeps it")
		_, err := semver.StrictNewVersion("26.06")
		assert.Error(t, err, "semver.StrictNewVersion rejects two-part versions")
	})
	t.Run("range admits later prereleases", func(t *testing.T) {
		c, err := semver.NewConstraint(">= 26.06.0-rc.2, < 26.07")
		require.NoError(t, err)
		assert.True(t, c.Check(sv("26.07.0-rc.1")), "semver admits v26.07-rc.1")
		assert.False(t, MustParseConstraint(">= v26.06-rc.2, < v26.07").Check(MustParseVersion("v26.07-rc.1")), "Constraint does not")
	})
}
