package release_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/invalid")

// invalidDirs are the invalid catalogs: those of the repository's
// testdata/invalid, which the kube module's object loader also loads, and
// those of release/testdata/invalid, whose problem the file loader alone
// can see (a cluster object cannot tell attempts: 0 from no attempts).
func invalidDirs(t testing.TB) []string {
	shared, err := filepath.Glob("../testdata/invalid/*")
	require.NoError(t, err)
	require.NotEmpty(t, shared, "no cases under ../testdata/invalid")
	own, err := filepath.Glob("testdata/invalid/*")
	require.NoError(t, err)
	require.NotEmpty(t, own, "no cases under testdata/invalid")
	return append(shared, own...)
}

// TestLoadInvalid loads each catalog under testdata/invalid and
// ../testdata/invalid and compares the error with the directory's
// want.txt. `go test ./release -update` rewrites the golden files; read
// the diff before committing it.
func TestLoadInvalid(t *testing.T) {
	dirs := invalidDirs(t)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c, err := release.LoadDir(dir)
			require.Error(t, err, "LoadDir(%s) loaded a catalog, want an error", dir)
			require.Nil(t, c, "LoadDir returns no catalog with its error")

			golden := filepath.Join(dir, "want.txt")
			got := err.Error() + "\n"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, rerr := os.ReadFile(golden)
			require.NoError(t, rerr, "run go test ./release -update to write it")
			assert.Equal(t, string(want), got, "LoadDir(%s) error (-want +got); go test ./release -update rewrites %s", dir, golden)

			// Every problem says where: file:line. Sorted by file then line.
			assert.ErrorIs(t, err, release.ErrInvalidCatalog)
			var le *release.LoadError
			require.ErrorAs(t, err, &le)
			require.NotEmpty(t, le.Problems)
			for _, p := range le.Problems {
				assert.NotEmpty(t, p.File, "problem without a file: %v", p)
				assert.Positive(t, p.Line, "problem without a line: %v", p)
				assert.NotEmpty(t, p.Message, "problem without a message: %v", p)
				if _, statErr := os.Stat(filepath.Join(dir, p.File)); statErr != nil {
					t.Errorf("problem %q names file %s, which is not in %s", p, p.File, dir)
				}
			}
			assert.True(t, slices.IsSortedFunc(le.Problems, func(a, b release.Problem) int {
				if c := strings.Compare(a.File, b.File); c != 0 {
					return c
				}
				return a.Line - b.Line
			}), "problems are not sorted by file and line")
			assert.Len(t, le.Unwrap(), len(le.Problems), "Unwrap returns one error per problem")
			assert.True(t, errors.Is(le.Unwrap()[0], le.Problems[0]), "Unwrap()[0] is the first Problem")
		})
	}
}
