package release

import (
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
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
