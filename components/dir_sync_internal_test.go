package components

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDirSyncsDirectories: every rename, removal and new directory of a
// Dir is followed, before the call returns, by a sync of the directory
// that holds it and of those above it up to the Dir's parent, so that
// an apply the status records as done survives a power cut. Each sync is
// recorded with what the file held at that moment: the directory is
// synced after the rename, not before. An unchanged file's directories
// are synced too (an earlier attempt may have renamed it and died before
// its sync). A failed sync is the call's error.
func TestDirSyncsDirectories(t *testing.T) {
	base := t.TempDir()
	d := NewDir(filepath.Join(base, "out"))
	file := filepath.Join(base, "out", "ns", "configmap_x.yaml")
	inventory := filepath.Join(base, "out", ".hopdag", "inventory", "i", "c.yaml")
	var (
		watch  string
		synced []string
		fail   error
	)
	d.syncDir = func(dir string) error {
		rel, err := filepath.Rel(base, dir)
		require.NoError(t, err)
		held := "missing"
		if data, err := os.ReadFile(watch); err == nil {
			held = string(data)
		}
		synced = append(synced, rel+": "+held)
		return fail
	}
	cm := func(data string) []Object {
		return []Object{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "x", YAML: data}}
	}
	ctx := context.Background()
	const inv = "instance: i\ncomponent: c\nversion: \"\"\nobjects: []\n"
	steps := []struct {
		name  string
		watch string
		do    func() error
		want  []string
	}{
		{name: "apply into new directories", watch: file, do: func() error { return d.Apply(ctx, cm("v1"), ApplyOptions{}) },
			want: []string{".: missing", "out: missing", "out/ns: v1", "out: v1", ".: v1"}},
		{name: "apply unchanged", watch: file, do: func() error { return d.Apply(ctx, cm("v1"), ApplyOptions{}) },
			want: []string{"out/ns: v1", "out: v1", ".: v1"}},
		{name: "apply changed", watch: file, do: func() error { return d.Apply(ctx, cm("v2"), ApplyOptions{}) },
			want: []string{"out/ns: v2", "out: v2", ".: v2"}},
		{name: "delete, the namespace directory with it", watch: file, do: func() error { return d.Delete(ctx, cm("")) },
			want: []string{"out: missing", ".: missing"}},
		{name: "save inventory", watch: inventory, do: func() error { return d.SaveInventory(ctx, Inventory{Instance: "i", Component: "c"}) },
			want: []string{
				"out: missing", "out/.hopdag: missing", "out/.hopdag/inventory: missing",
				"out/.hopdag/inventory/i: " + inv, "out/.hopdag/inventory: " + inv, "out/.hopdag: " + inv, "out: " + inv, ".: " + inv,
			}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			watch, synced = s.watch, nil
			require.NoError(t, s.do())
			assert.Equal(t, s.want, synced, "directories synced, with what the file held then")
		})
	}

	fail = errors.New("input/output error")
	err := d.Apply(ctx, cm("v3"), ApplyOptions{})
	assert.EqualError(t, err, "components: ConfigMap ns/x: input/output error", "Apply whose directory sync failed")
}
