package release

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadString is Load's result as text: the error, or what was loaded.
func loadString(t *testing.T, fsys fstest.MapFS) string {
	t.Helper()
	c, err := Load(fsys)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d releases, %d component versions, %d paths", len(c.Releases), len(c.Components), len(c.Paths))
}

// TestLoadPieces: Load parses a file in pieces of whole documents; the
// result is the same as for the file parsed whole, whatever the pieces'
// size: problems, their lines and order, the caps, the resynchronisation
// after syntax errors, binary data. Each testdata catalog is loaded with
// pieces of one document, of a few, and of the whole file, and so is a
// file of many documents with problems at and around the cuts.
func TestLoadPieces(t *testing.T) {
	defer func(n int) { pieceBytes = n }(pieceBytes)
	for i, fsys := range loadCases(t) {
		pieceBytes = 1 << 30
		whole := loadString(t, fsys)
		for _, size := range []int{1, 200, 1000} {
			pieceBytes = size
			assert.Equal(t, whole, loadString(t, fsys), "case %d, pieces of %d bytes", i, size)
		}
	}
}

// loadCases are the testdata catalogs, valid and invalid, and a catalog of
// many documents with problems of every kind, some at and around the cuts
// between small pieces.
func loadCases(t testing.TB) []fstest.MapFS {
	var cases []fstest.MapFS
	dirs, err := filepath.Glob("../testdata/invalid/*")
	require.NoError(t, err)
	own, err := filepath.Glob("testdata/invalid/*")
	require.NoError(t, err)
	dirs = append(append(dirs, own...), "../testdata/catalog", "../testdata/two-track")
	for _, dir := range dirs {
		fsys := fstest.MapFS{}
		require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			fsys[filepath.ToSlash(rel)] = &fstest.MapFile{Data: data}
			return err
		}))
		cases = append(cases, fsys)
	}
	// Many documents; problems of every kind, some in the documents on
	// either side of where small pieces end; over 100 problems in all.
	var b strings.Builder
	for i := range 300 {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "apiVersion: hopdag.io/v1alpha1\nkind: ComponentVersion\nmetadata: {name: c%d}\nspec:\n  name: c%d\n  version: v1.%d\n  handler: h\n", i, i, i)
		switch i % 7 {
		case 1:
			b.WriteString("  unknown: 1\n")
		case 2:
			b.WriteString("  retries: [oops\n") // unclosed flow sequence
		case 3:
			b.WriteString("  timeout: {a: 1}\n")
		case 4:
			b.WriteString("  params:\n    a: 1\n   b: 2\n") // bad indentation
		case 5:
			b.WriteString("  dependencies: [c0, c0]\n")
		}
		if i == 150 {
			b.WriteString("  group: \x01\n")
		}
	}
	return append(cases, fstest.MapFS{"many.yaml": {Data: []byte(b.String())}, "b.yaml": {Data: []byte(b.String()[:len(b.String())/3])}})
}
