package path_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Catalogs built in code with release.NewCatalog.

func TestTracks(t *testing.T) {
	rels := []release.Release{
		{Name: "a", Version: v("v1.0")}, {Name: "b", Version: v("v1.1")},
		{Name: "c", Version: v("v1.0"), Track: "lts"}, {Name: "d", Version: v("v1.5"), Track: "lts"},
	}
	paths := []release.UpgradePath{
		{Name: "default", Rules: []release.Rule{rule("v1.0", "v1.1")}},
		{Name: "lts", Track: "lts", Rules: []release.Rule{rule("v1.0", "v1.5")}},
	}
	c, err := release.NewCatalog(rels, nil, paths)
	require.NoError(t, err)
	r, err := path.Resolve(c, path.State{"lts": v("v1.0")}, path.State{"lts": v("v1.5")})
	require.NoError(t, err)
	assert.Equal(t, "lts", r.Track)
	assert.Equal(t, []string{"v1.0", "v1.5"}, hopsOf(r))
	assert.Contains(t, r.String(), "on track lts")
	_, err = path.Resolve(c, at(v("v1.0")), at(v("v1.5")))
	require.ErrorIs(t, err, path.ErrUnknownVersion)
	_, err = path.Resolve(c, path.State{"lts": v("v1.0")}, path.State{"lts": v("v1.1")})
	require.ErrorIs(t, err, path.ErrUnknownVersion)
}

func TestIndex(t *testing.T) {
	c := loadTestdata(t)
	_, err := path.NewIndex(nil)
	require.Error(t, err)

	ix, err := path.NewIndex(c)
	require.NoError(t, err)
	assert.Equal(t, "", ix.Track())
	assert.Len(t, ix.Versions(), 8)
	assert.Empty(t, ix.Guards())
	open, closed := ix.Edges()
	assert.Equal(t, 10, open, "each range gives 2 edges")
	assert.Equal(t, 1, closed)

	_, err = ix.Resolve(v("v26.06"), v("v26.09-rc.1"))
	require.ErrorIs(t, err, path.ErrNoRoute)
	r, err := ix.Resolve(v("v26.06"), v("v26.09-rc.1"), path.AcceptRisks("containerd-v2-config"))
	require.NoError(t, err)
	assert.Len(t, r.Hops, 1)
	_, err = ix.Resolve(v("v26.06"), v("v26.09-rc.1"))
	require.ErrorIs(t, err, path.ErrNoRoute, "per-query options do not stick")
	_, err = ix.Resolve(v("v26.06"), v("v26.09"), path.WithTrack(""))
	require.NoError(t, err, "repeating the index's track is fine")
	_, err = ix.Resolve(v("v26.06"), v("v26.09"), path.WithTrack("lts"))
	require.ErrorIs(t, err, path.ErrInvalidOption)
	_, err = ix.Targets(v("v26.06"), path.WithGuards(path.KubernetesSkewGuard()))
	require.ErrorIs(t, err, path.ErrInvalidOption)

	// Options given to NewIndex apply to every query.
	ix, err = path.NewIndex(c, path.AcceptRisks("containerd-v2-config"), path.WithGuards(path.KubernetesSkewGuard()))
	require.NoError(t, err)
	assert.Len(t, ix.Guards(), 1)
	r, err = ix.Resolve(v("v26.06"), v("v26.09-rc.1"))
	require.NoError(t, err)
	assert.Len(t, r.Hops, 1)
	ts, err := ix.Targets(v("v26.06"))
	require.NoError(t, err)
	assert.Len(t, ts, 3)
}

func TestIndexConcurrent(t *testing.T) {
	c := loadTestdata(t)
	ix, err := path.NewIndex(c)
	require.NoError(t, err)
	want := map[string]string{}
	for _, a := range c.Versions() {
		for _, b := range c.Versions() {
			r, err := ix.Resolve(a, b, path.AcceptRisks("containerd-v2-config"))
			want[a.String()+b.String()] = fmt.Sprint(r, err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				for _, a := range c.Versions() {
					for _, b := range c.Versions() {
						r, err := ix.Resolve(a, b, path.AcceptRisks("containerd-v2-config"))
						if got := fmt.Sprint(r, err); got != want[a.String()+b.String()] {
							errs <- errors.New(got)
							return
						}
					}
					if _, err := ix.Targets(a); err != nil && !errors.Is(err, path.ErrNoRoute) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
