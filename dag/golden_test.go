package dag

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./dag -run TestGolden -update to create it")
	assert.Equal(t, string(want), string(got), "%s differs; if the change is intended, rerun with -update", path)
}

func TestGolden(t *testing.T) {
	c := loadCatalog(t)
	for _, hop := range [][2]string{
		{"v26.06-rc.2", "v26.06-rc.3"},
		{"v26.03", "v26.06"},
		{"v26.06", "v26.09"},
	} {
		t.Run(hop[0]+"_"+hop[1], func(t *testing.T) {
			g, err := Build(c, rel(t, c, hop[0]), rel(t, c, hop[1]))
			require.NoError(t, err)
			base := hop[0] + "_" + hop[1]
			golden(t, base+".dot", []byte(g.DOT()))
			golden(t, base+".mmd", []byte(g.Mermaid()))
			js, err := json.MarshalIndent(g, "", "  ")
			require.NoError(t, err)
			golden(t, base+".json", append(js, '\n'))

			// Deterministic: a second build renders the same bytes.
			again, err := Build(c, rel(t, c, hop[0]), rel(t, c, hop[1]))
			require.NoError(t, err)
			assert.Equal(t, g.DOT(), again.DOT())
			assert.Equal(t, g.Mermaid(), again.Mermaid())
		})
	}
}

// Graphs from New have no releases: the pictures say so by omission.
func TestGoldenNew(t *testing.T) {
	g, err := New([]Node{
		{Name: "app", Deps: []string{"db", "cache"}, Duration: 30e9},
		{Name: "db", Duration: 120e9},
		{Name: `we"ird\name`, Deps: []string{"db"}},
		{Name: "cache", Duration: 10e9},
	})
	require.NoError(t, err)
	golden(t, "new.dot", []byte(g.DOT()))
	golden(t, "new.mmd", []byte(g.Mermaid()))
	js, err := json.MarshalIndent(g, "", "  ")
	require.NoError(t, err)
	golden(t, "new.json", append(js, '\n'))
}
