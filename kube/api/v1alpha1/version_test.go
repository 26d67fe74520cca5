package v1alpha1_test

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
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

// targetParses is what the controller reads a Target with: a version, or
// a state (path.ParseState), written without blanks and with a name for
// every track, as the pattern demands.
func targetParses(s string) error {
	if !strings.Contains(s, "=") {
		_, err := release.ParseVersion(s)
		return err
	}
	st, err := path.ParseState(s)
	if err != nil {
		return err
	}
	if _, ok := st[""]; ok || strings.ContainsFunc(s, unicode.IsSpace) {
		return errors.New("a blank or an unnamed track")
	}
	return nil
}

// TestTargetPatternMatchesParse checks that the CRDs' target pattern
// accepts what the controller reads (a version or a state), and only
// that but for what a pattern cannot see: numbers too large for 64 bits
// and a track given twice, which the controller reports.
func TestTargetPatternMatchesParse(t *testing.T) {
	re := regexp.MustCompile(v1alpha1.TargetPattern)
	for _, s := range []string{
		"v26.06", "v26.06-rc.2", "13.01.2",
		"platform=13.01.0", "platform=13.01.0,kubernetes=v1.32.0", "kubernetes=v1.33.1,platform=27.03.0-rc.1+b.1", "k8s.io/x=v1.2", "k8s.io_x-2=v1.2", "a/b=v1.2", "pláform=v1.2",
		"", "=", "platform=", "=13.01.0", "platform=13.01.0,", ",platform=13.01.0", "platform=13.01.0,kubernetes", "platform=latest",
		"platform = 13.01.0", "platform=13.01.0, kubernetes=v1.32.0", "plat form=13.01.0", "platform==13.01.0", "a=b=v1.2", "v1.2,v1.3",
	} {
		err := targetParses(s)
		if got, want := re.MatchString(s), err == nil; got != want {
			t.Errorf("pattern matches %q = %v, the controller reads it = %v (err %v)", s, got, want, err)
		}
	}
	crd, err := os.ReadFile("../../config/crd/hopdag.io_clusterversions.yaml")
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(crd), "rule: self.matches(r'"+v1alpha1.TargetPattern+"')"), "desiredVersion and installedVersion are checked against TargetPattern")
}

// FuzzTargetPattern checks the same on arbitrary input.
func FuzzTargetPattern(f *testing.F) {
	for _, s := range []string{"platform=13.01.0,kubernetes=v1.32.0", "v1.2", "a=v1,b=v2", "a=v1.0,a=v1.1"} {
		f.Add(s)
	}
	re := regexp.MustCompile(v1alpha1.TargetPattern)
	f.Fuzz(func(t *testing.T, s string) {
		err := targetParses(s)
		if err != nil && re.MatchString(s) && !strings.Contains(err.Error(), "too large") && !strings.Contains(err.Error(), "given twice") {
			t.Fatalf("pattern matches %q but the controller refuses it: %v", s, err)
		}
		if err == nil && !re.MatchString(s) {
			t.Fatalf("the controller reads %q but the pattern refuses it", s)
		}
	})
}
