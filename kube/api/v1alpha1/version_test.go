package v1alpha1_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/release"
)

// TestVersionPatternMatchesParseVersion checks that the CRDs' version
// pattern accepts exactly what release.ParseVersion accepts (but for
// numbers too large for 64 bits, which only ParseVersion sees).
func TestVersionPatternMatchesParseVersion(t *testing.T) {
	re := regexp.MustCompile(v1alpha1.VersionPattern)
	for _, s := range []string{
		"v26.06", "v26.06-rc.2", "26.06.01", "13.01.2", "v1.34.1", "V1.2", "v1.2.3+build.5",
		"v1.2-rc-1.x", "1.2.3-0", "v26.09-rc.1+meta",
		"", "v", "vv1.2", "1", "v1.2.3.4", "v1..2", "v1.2-", "v1.2-rc..1", "v1.2+", "v1.x", " v1.2", "v1.2 ",
		"v1.2-rc_1", "latest", "v1.2.3-rc.1+", "-1.2",
	} {
		_, err := release.ParseVersion(s)
		if got, want := re.MatchString(s), err == nil; got != want {
			t.Errorf("pattern matches %q = %v, ParseVersion accepts it = %v (err %v)", s, got, want, err)
		}
	}
}

// FuzzVersionPattern checks the same on arbitrary input.
func FuzzVersionPattern(f *testing.F) {
	for _, s := range []string{"v26.06-rc.2", "1.2.3+x", "v1.2-", "vV1.2"} {
		f.Add(s)
	}
	re := regexp.MustCompile(v1alpha1.VersionPattern)
	f.Fuzz(func(t *testing.T, s string) {
		_, err := release.ParseVersion(s)
		// Only an overflowing number may pass the pattern and fail ParseVersion.
		if err != nil && re.MatchString(s) && !strings.Contains(err.Error(), "too large") {
			t.Fatalf("pattern matches %q but ParseVersion refuses it: %v", s, err)
		}
		if err == nil && !re.MatchString(s) {
			t.Fatalf("ParseVersion accepts %q but the pattern refuses it", s)
		}
	})
}
