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

// Differential tests against Masterminds/semver/v3 (DESIGN.md): where both
// libraries define the order — prerelease identifiers that are all digits or
// hold no digit at all ("rc.10", not "rc10") — Version.Compare must agree
// with semver's Compare.

// dotted reports whether every prerelease identifier of v is all digits
// (at most 18, so that semver parses it as a number too) or holds no digit.
func dotted(v Version) bool {
	if v.Prerelease() == "" {
		return true
	}
	for id := range strings.SplitSeq(v.Prerelease(), ".") {
		if isDigits(id) && len(id) > 18 || !isDigits(id) && strings.ContainsAny(id, "0123456789") {
			return false
		}
	}
	return true
}

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
		words := []string{"rc", "alpha", "beta", "a", "b", "RC", "pre-release", "-", "x-y"}
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
		require.True(t, dotted(va) && dotted(vb), "generator wrote a non-dotted prerelease: %s, %s", a, b)
		want, ok := semverCompare(a, b)
		if !ok {
			continue
		}
		compared++
		if got := va.Compare(vb); got != want {
			t.Fatalf("Compare(%s, %s) = %d, semver says %d", a, b, got, want)
		}
	}
	// The generator is meant to produce versions semver accepts.
	require.Greater(t, compared, 40_000, "pairs that semver also parsed")
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
		if err != nil || !dotted(va) || !dotted(vb) {
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
