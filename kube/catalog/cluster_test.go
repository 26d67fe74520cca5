package catalog_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/release"
)

// lifecycleDir is a catalog that uses every field the CRDs once lacked:
// helm, lifecycle phases, gates (an empty one too), rollback,
// irreversible, a rule's gate and onFailure, channels.
const lifecycleDir = "testdata/lifecycle"

// TestClusterKeepsEveryField applies a catalog directory to a real API
// server as a client without a schema would (every document as it is
// written, the server's default field validation), loads it back with
// Load, and checks that it is the catalog the file loader reads from the
// directory, but for the Sources. A field that a CRD lacks is pruned by
// the server without an error: a gate or a rollback policy would vanish
// between the directory and the operator.
func TestClusterKeepsEveryField(t *testing.T) {
	c := newClient(t)
	want, err := release.LoadDir(lifecycleDir)
	require.NoError(t, err)
	ns := newNamespace(t, c)
	ctx := context.Background()
	applyDir(t, c, ns, lifecycleDir)

	got, err := catalog.Load(ctx, c, ns, catalog.WithManifests(os.DirFS(lifecycleDir)))
	require.NoError(t, err)
	stripSources(want)
	stripSources(got)
	assert.Equal(t, want.Releases, got.Releases, "releases (-want +got)")
	assert.Equal(t, want.Components, got.Components, "components (-want +got)")
	assert.Equal(t, want.Paths, got.Paths, "upgrade paths (-want +got)")

	// What the comparison above relies on: the catalog uses the fields.
	api, ok := got.Component("api", release.MustParseVersion("v2.0"))
	require.True(t, ok, "api v2.0 in the catalog from the cluster")
	require.Len(t, api.Phases, 3)
	assert.Equal(t, &release.Gate{}, api.Phases[0].Gate, "an empty gate (gate: {}) is a gate")
	assert.NotNil(t, api.Phases[2].Gate, "the rollout phase's gate")
	db, ok := got.Component("db", release.MustParseVersion("v15.0"))
	require.True(t, ok, "db v15.0 in the catalog from the cluster")
	assert.NotEmpty(t, db.Irreversible, "db v15.0 irreversible")
	assert.NotNil(t, db.Gate, "db v15.0 gate")
	require.Len(t, got.Paths, 1)
	assert.Equal(t, release.OnFailureRollback, got.Paths[0].Rules[0].OnFailure)
	assert.Equal(t, []string{"fast", "stable"}, got.Channels(""))
}

// applyDir creates, in ns, every hopdag.io document of the *.yaml files
// under dir as it is written (an unstructured object: no Go type drops a
// field on the way, as kubectl apply sends it).
func applyDir(t *testing.T, c client.Client, ns, dir string) {
	t.Helper()
	ctx := context.Background()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var u unstructured.Unstructured
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if u.GetAPIVersion() != release.APIVersion {
				continue
			}
			u.SetNamespace(ns)
			if err := c.Create(ctx, &u); err != nil {
				return err
			}
			n++
		}
	})
	require.NoError(t, err)
	require.Positive(t, n, "no catalog object in %s", dir)
}

// stripSources clears where each part of c came from: the loaders name
// files and objects.
func stripSources(c *release.Catalog) {
	for i := range c.Releases {
		c.Releases[i].Source = release.Source{}
	}
	for i := range c.Components {
		c.Components[i].Source = release.Source{}
	}
	for i := range c.Paths {
		c.Paths[i].Source = release.Source{}
		for j := range c.Paths[i].Rules {
			c.Paths[i].Rules[j].Source = release.Source{}
		}
	}
}
