package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/release"
)

// TestUpdatesCache: the reachable targets are computed again only when
// what shapes them changed (the catalog, the position, the track, the
// channel, prereleases, the accepted risks), once per ClusterVersion, and
// what a caller does with the slices it gets does not reach the cache.
func TestUpdatesCache(t *testing.T) {
	calls := 0
	defer func(f func(*release.Catalog, *v1alpha1.ClusterVersionSpec, position) ([]v1alpha1.Update, []v1alpha1.ConditionalUpdate, error)) {
		computeUpdates = f
	}(computeUpdates)
	computeUpdates = func(c *release.Catalog, spec *v1alpha1.ClusterVersionSpec, current position) ([]v1alpha1.Update, []v1alpha1.ConditionalUpdate, error) {
		calls++
		return updatesFor(c, spec, current)
	}
	cat, err := release.LoadDir("../../testdata/catalog")
	require.NoError(t, err)
	other, err := release.LoadDir("../../testdata/catalog")
	require.NoError(t, err)
	at := func(s string) position {
		p, err := parsePosition(s)
		require.NoError(t, err)
		return p
	}
	cv := &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cluster"}}
	var uc updatesCache

	l, err := uc.get(cv, cat, at("v26.06-rc.2"))
	require.NoError(t, err)
	require.NotEmpty(t, l.available)
	want := l.available[0].Version
	l.available[0].Version = "changed by the caller"
	for _, step := range []struct {
		what  string
		do    func()
		calls int
	}{
		{"the same again", func() {}, 1},
		{"another catalog", func() { cat = other }, 2},
		{"another position", func() {}, 3},
		{"another channel", func() { cv.Spec.Channel = "stable" }, 4},
		{"prereleases", func() { cv.Spec.AllowPrereleases = true }, 5},
		{"accepted risks", func() { cv.Spec.AcceptRisks = []string{"r"} }, 6},
		{"another track", func() { cv.Spec.Track = "t" }, 7},
	} {
		step.do()
		pos := "v26.06-rc.2"
		if step.calls >= 3 {
			pos = "v26.06"
		}
		l, _ := uc.get(cv, cat, at(pos))
		assert.Equal(t, step.calls, calls, step.what)
		if step.calls == 1 {
			require.NotEmpty(t, l.available)
			assert.Equal(t, want, l.available[0].Version, "%s: the caller's change did not reach the cache", step.what)
		}
	}
	// Another ClusterVersion has its own answer.
	uc.get(&v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "second"}}, cat, at("v26.06"))
	assert.Equal(t, 8, calls)
	assert.Len(t, uc.m, 2)
}
