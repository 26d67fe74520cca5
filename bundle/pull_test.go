package bundle

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// TestPullRefusesEmptyCatalog: a bundle with no catalog document pulled
// as an empty catalog, while LoadDir refuses the same directory. Pull
// refuses it with LoadDir's words; Fetch, which loads nothing, does not.
func TestPullRefusesEmptyCatalog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"comments only", map[string]string{"notes.yaml": "# nothing yet\n"}},
		{"hidden and chart files only", map[string]string{".hidden.yaml": "kind: Release\n", "charts/app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			d := writeLayout(t, dir, "empty", tc.files)
			ref := "oci-layout://" + dir + ":empty"
			_, err := New().Pull(context.Background(), ref)
			require.ErrorIs(t, err, release.ErrInvalidCatalog)
			assert.EqualError(t, err, "bundle: pull "+ref+" ("+d.String()+"): release: invalid catalog: the bundle holds no catalog document: no .yaml or .yml file in it (hidden directories and Helm charts left out) has a Release, ComponentVersion or UpgradePath; check the reference")
			b, err := New().Fetch(context.Background(), ref)
			require.NoError(t, err, "Fetch(%s)", ref)
			assert.Nil(t, b.Catalog, "Fetch's catalog")
		})
	}
}
