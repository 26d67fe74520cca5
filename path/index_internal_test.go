package path

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// The range expansion narrows the versions it checks to the spans a
// constraint's comparisons allow.
func TestSpans(t *testing.T) {
	var rels []release.Release
	for _, v := range []string{"v1.0", "v1.1-rc.1", "v1.1", "v1.2", "v2.0"} {
		rels = append(rels, release.Release{Name: v, Version: release.MustParseVersion(v)})
	}
	c, err := release.NewCatalog(rels, nil, nil)
	require.NoError(t, err)
	ix, err := NewIndex(c)
	require.NoError(t, err)
	tests := []struct {
		c    string
		want []span
	}{
		{"*", []span{{0, 5}}},
		{">= v1.1-rc.1, < v1.2", []span{{1, 3}}},
		{"> v1.0, <= v1.2", []span{{1, 4}}},
		{"= v1.1", []span{{2, 3}}},
		{"v1.0 || >= v1.2", []span{{0, 1}, {3, 5}}},
		{"!= v1.1", []span{{0, 5}}},
		{">= v1.0.5, < v1.3", []span{{1, 4}}},       // bounds between known versions
		{">= 1.1.0-rc.01, < 2.0.0", []span{{1, 4}}}, // other spellings of known versions
		{"< v0.1", nil},
		{">= v1.1.5, < v3.0", []span{{3, 5}}},
	}
	for _, tt := range tests {
		got := ix.spans(release.MustParseConstraint(tt.c), nil)
		assert.Equal(t, len(tt.want), len(got), tt.c)
		if len(tt.want) > 0 {
			assert.Equal(t, tt.want, got, tt.c)
		}
	}
	assert.Empty(t, ix.spans(release.Constraint{}, nil))
}

// When a pooled scratch's stamp wraps, its old marks must not count.
func TestScratchStampWraps(t *testing.T) {
	c, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	ix, err := NewIndex(c)
	require.NoError(t, err)
	v := release.MustParseVersion
	want, err := ix.Resolve(v("v26.03"), v("v26.09"))
	require.NoError(t, err)

	s := ix.getScratch()
	ix.walk(s, 0, -1, &query{acceptAll: true}, true) // leave marks behind
	s.stamp = math.MaxUint32
	s.gen[0], s.mark[0] = math.MaxUint32, math.MaxUint32
	s.restamp()
	assert.Equal(t, uint32(1), s.stamp)
	assert.Zero(t, s.gen[0], "old marks are cleared")
	assert.Zero(t, s.mark[0])
	ix.pool.Put(s)

	got, err := ix.Resolve(v("v26.03"), v("v26.09"))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = ix.Resolve(v("v26.09"), v("v26.03"))
	require.ErrorIs(t, err, ErrNoRoute)
}
