package catalog_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/release"
)

// countingReader counts the List calls that reach the API server.
type countingReader struct {
	client.Reader
	lists atomic.Int64
}

func (r *countingReader) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	r.lists.Add(1)
	return r.Reader.List(ctx, l, opts...)
}

// A Cache builds the catalog once while its objects stay as they are, and
// again as soon as one is written, added or removed; an invalid catalog's
// error is kept like a catalog, and goes when the catalog is fixed.
func TestCache(t *testing.T) {
	c := newClient(t)
	ns := newNamespace(t, c)
	ctx := context.Background()
	applyDir(t, c, ns, "testdata/lifecycle")
	r := &countingReader{Reader: c}
	cache := catalog.NewCache()

	first, err := cache.Load(ctx, r, ns)
	require.NoError(t, err)
	again, err := cache.Load(ctx, r, ns)
	require.NoError(t, err)
	assert.Same(t, first, again, "unchanged objects: the catalog built before")
	assert.Equal(t, int64(6), r.lists.Load(), "each Load lists (three kinds)")

	// A write moves the resourceVersion: the catalog is built again and
	// shows it.
	var cvs v1alpha1.ComponentVersionList
	require.NoError(t, c.List(ctx, &cvs, client.InNamespace(ns)))
	obj := cvs.Items[0]
	obj.Spec.ExpectedDuration = "77s"
	require.NoError(t, c.Update(ctx, &obj))
	changed, err := cache.Load(ctx, r, ns)
	require.NoError(t, err)
	assert.NotSame(t, first, changed)
	cv, ok := changed.Component(obj.Spec.Name, release.MustParseVersion(string(obj.Spec.Version)))
	require.True(t, ok)
	assert.Equal(t, "1m17s", cv.ExpectedDuration.String())

	// A second object of the same component version makes the catalog
	// invalid; the error is kept, then goes with the object.
	bad := obj.DeepCopy()
	bad.ResourceVersion, bad.UID = "", ""
	bad.Name += "-dup"
	bad.Spec.Dependencies = []string{bad.Spec.Name}
	require.NoError(t, c.Create(ctx, bad))
	_, err = cache.Load(ctx, r, ns)
	require.ErrorIs(t, err, release.ErrInvalidCatalog)
	_, again2 := cache.Load(ctx, r, ns)
	assert.Equal(t, err, again2, "the invalid catalog's error, kept")
	require.NoError(t, c.Delete(ctx, bad))
	fixed, err := cache.Load(ctx, r, ns)
	require.NoError(t, err)
	assert.NotSame(t, changed, fixed)
}
