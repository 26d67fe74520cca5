package release

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFastPathChangesNothing: Load gives the same catalog, or the same
// problems, with the fast path and without it (every document parsed by
// yaml.v3), on the testdata catalogs and on documents with problems of
// every kind.
func TestFastPathChangesNothing(t *testing.T) {
	for i, fsys := range loadCases(t) {
		sameWithoutFastPath(t, fsys, fmt.Sprintf("case %d", i))
	}
}

func sameWithoutFastPath(t *testing.T, fsys fstest.MapFS, what string) {
	t.Helper()
	fast, fastErr := load(fsys, true)
	slow, slowErr := load(fsys, false)
	if fastErr != nil || slowErr != nil {
		assert.Equal(t, fmt.Sprint(slowErr), fmt.Sprint(fastErr), what)
		return
	}
	assert.Equal(t, slow, fast, what)
}

// FuzzFastPathLoad: Load with and without the fast path agree on any
// catalog file.
func FuzzFastPathLoad(f *testing.F) {
	for _, fsys := range loadCases(f) {
		for _, file := range fsys {
			f.Add(file.Data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		sameWithoutFastPath(t, fstest.MapFS{"c.yaml": {Data: data}}, "")
	})
}

// TestValidCatalogParsedOnce: a catalog without problems has each document
// parsed once; nothing is parsed again to find where a field is written
// before there is a problem to report (the check of track names did so
// for every Release and UpgradePath, which doubled what Load allocates).
func TestValidCatalogParsedOnce(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/*")
	require.NoError(t, err)
	loaded := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		for _, fast := range []bool{true, false} {
			l := newLoader(fast)
			c, err := l.load(os.DirFS(dir))
			if err != nil {
				continue // not a valid catalog (or not a catalog)
			}
			loaded++
			// A warning's line is found by parsing its document again.
			assert.LessOrEqual(t, l.sn.lines.Reparsed(), len(c.Warnings()), "Load(%s) with fast path %v parsed documents again (%d) though the catalog has %d warnings and no problem", dir, fast, l.sn.lines.Reparsed(), len(c.Warnings()))
		}
	}
	require.GreaterOrEqual(t, loaded, 4, "valid catalogs under ../testdata loaded")
}
