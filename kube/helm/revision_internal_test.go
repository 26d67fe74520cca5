package helm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hopdag/hopdag/release"
)

// A version's label is its canonical form, the same for equal versions,
// and a valid label value for every version.
func TestVersionLabel(t *testing.T) {
	long := "v1.0.0-" + strings.Repeat("a", 70)
	for _, tc := range []struct{ version, want string }{
		{"v26.06-rc.2", "26.6.0-rc.2"},
		{"26.6.0-rc.02", "26.6.0-rc.2"},
		{"v1.0", "1.0.0"},
		{"v1.0+build.7", "1.0.0"},
		{"v1.0.0-a-", "sha256-"}, // ends in "-": not a label value
		{long, "sha256-"},        // longer than 63
	} {
		t.Run(tc.version, func(t *testing.T) {
			got := versionLabel(release.MustParseVersion(tc.version))
			assert.Empty(t, validation.IsValidLabelValue(got), "versionLabel(%s) = %q, a valid label value", tc.version, got)
			if strings.HasSuffix(tc.want, "-") {
				assert.True(t, strings.HasPrefix(got, tc.want) && len(got) == len(tc.want)+40, "versionLabel(%s) = %q, want %s and 40 hex digits", tc.version, got, tc.want)
			} else {
				assert.Equal(t, tc.want, got, "versionLabel(%s)", tc.version)
			}
		})
	}
	assert.NotEqual(t, versionLabel(release.MustParseVersion(long)), versionLabel(release.MustParseVersion(long+"b")))
}
