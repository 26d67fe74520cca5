package release

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
