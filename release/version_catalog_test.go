package release_test

import (
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/Masterminds/semver/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// TestDistinctVersionsNotDuplicates: a catalog keys its Releases and
// ComponentVersions by version, so the loader's idea of "the same version"
// must be Version's. Two versions Version orders apart both load, in one
// catalog, each found by its own spelling; two spellings of one version are
// refused as declared twice, with both spellings named.
//
// The "apart" pairs are those a looser normalisation conflates (an earlier
// Version held dev.e01f3a9 equal to dev.e1f03a9 by dropping the zeros of
// every digit run; dropping "-" or case would conflate the others).
// Masterminds/semver/v3 keeps them apart too, and agrees on the "same"
// pairs it parses, except where Version documents a deviation: letters
// then digits compare by the number, so rc01 is rc1 (semver compares them
// as text). Build metadata is ignored by both.
func TestDistinctVersionsNotDuplicates(t *testing.T) {
	const (
		apart   = "apart"   // semver orders them apart
		same    = "same"    // semver compares them equal
		invalid = "invalid" // semver refuses one of them
	)
	tests := []struct {
		name   string
		a, b   string
		same   bool   // Version says they are one version
		semver string // what semver/v3 says
	}{
		{"zeros inside a hash", "v1.0.0-dev.e01f3a9", "v1.0.0-dev.e1f03a9", false, apart},
		{"a leading zero of a hash", "v1.0-dev.0e1", "v1.0-dev.e1", false, apart},
		{"dash and dot", "v1.0-rc-1", "v1.0-rc.1", false, apart},
		{"dash and none", "v1.0-rc-1", "v1.0-rc1", false, apart},
		{"digits then letters keep their zeros", "v1.0-1a", "v1.0-01a", false, apart},
		{"letters digits letters", "v1.0-a10", "v1.0-a1b", false, apart},
		{"rc9 and rc10 (ordered by number)", "v1.0-rc9", "v1.0-rc10", false, apart},
		{"prerelease case", "v1.0-RC.1", "v1.0-rc.1", false, apart},
		{"a trailing zero identifier", "v1.0-rc.1.0", "v1.0-rc.1", false, apart},
		{"a zero after letters", "v1.0-a0", "v1.0-a", false, apart},

		{"v prefix", "v26.06", "26.06", true, same},
		{"leading zeros of the core", "v26.06", "26.6.0", true, same},
		{"a zero patch", "v26.06", "26.06.00", true, same},
		{"capital V", "V26.06", "v26.06", true, invalid},
		{"build metadata", "v1.0+build.1", "v1.0+build.2", true, same},
		{"build metadata of a prerelease", "v1.0-rc.1+b1", "v1.0-rc.1+b2", true, same},
		{"a leading zero of a numeric identifier", "v1.0-rc.01", "v1.0-rc.1", true, invalid},
		{"a leading zero after letters (deviation)", "v1.0-rc01", "v1.0-rc1", true, apart},
	}
	// One document of each kind, and the line of its spec.version.
	kinds := []struct {
		kind string
		line int
		doc  func(name, version string) string
	}{
		{"ComponentVersion", 6, func(name, version string) string {
			return fmt.Sprintf("%skind: ComponentVersion\nmetadata: {name: %s}\nspec:\n  name: etcd\n  version: %s\n  handler: etcd\n", header, name, version)
		}},
		{"Release", 5, func(name, version string) string {
			return fmt.Sprintf("%skind: Release\nmetadata: {name: %s}\nspec:\n  version: %s\n", header, name, version)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := release.MustParseVersion(tt.a), release.MustParseVersion(tt.b)
			require.Equal(t, tt.same, a.Equal(b), "MustParseVersion(%s).Equal(%s)", tt.a, tt.b)
			sa, errA := semver.NewVersion(tt.a)
			sb, errB := semver.NewVersion(tt.b)
			switch {
			case tt.semver == invalid:
				assert.True(t, errA != nil || errB != nil, "semver parses %s and %s", tt.a, tt.b)
			case errA != nil || errB != nil:
				t.Fatalf("semver refuses %s or %s: %v, %v", tt.a, tt.b, errA, errB)
			default:
				assert.Equal(t, tt.semver == same, sa.Compare(sb) == 0, "semver: %s.Compare(%s) = %d", tt.a, tt.b, sa.Compare(sb))
			}

			for _, k := range kinds {
				kind := k.kind
				t.Run(kind, func(t *testing.T) {
					fsys := fstest.MapFS{
						"a.yaml": {Data: []byte(k.doc("first", tt.a))},
						"b.yaml": {Data: []byte(k.doc("second", tt.b))},
					}
					c, err := release.Load(fsys)
					if !tt.same {
						require.NoError(t, err, "Load of %s %s and %s", kind, tt.a, tt.b)
						for _, want := range []release.Version{a, b} {
							var got release.Version
							var ok bool
							if kind == "Release" {
								var r *release.Release
								if r, ok = c.Release(want); ok {
									got = r.Version
								}
							} else {
								var cv *release.ComponentVersion
								if cv, ok = c.Component("etcd", want); ok {
									got = cv.Version
								}
							}
							require.True(t, ok, "%s %s not in the catalog", kind, want)
							assert.Equal(t, want.Original(), got.Original(), "%s found by %s", kind, want)
						}
						if kind == "Release" {
							lo, hi := tt.a, tt.b
							if b.Less(a) {
								lo, hi = hi, lo
							}
							assert.Equal(t, []string{lo, hi}, originals(c.Versions()), "Versions(), in order")
						}
						return
					}
					require.Error(t, err, "Load of %s %s and %s", kind, tt.a, tt.b)
					var le *release.LoadError
					require.ErrorAs(t, err, &le)
					require.Len(t, le.Problems, 1, "problems: %v", err)
					what := "release " + tt.b
					if kind == "ComponentVersion" {
						what = "component etcd version " + tt.b
					}
					assert.Equal(t, fmt.Sprintf("b.yaml:%d: spec.version: %s is declared twice (%s and %s are the same version) (first at a.yaml:%d); remove one of the two %s documents",
						k.line, what, tt.a, tt.b, k.line, kind), le.Problems[0].Error())
				})
			}
		})
	}
}
