package bundle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnpackPathLimits: a 189-byte layer holding one file 16 KiB deep took
// seconds to pull (and a 1 MiB path hours): a path in the catalog is at
// most 4 KiB long and 64 directories deep, a directory's entry too, and
// the error says which limit and by how much.
func TestUnpackPathLimits(t *testing.T) {
	deep := func(levels int) string { return strings.Repeat("a/", levels) }
	long := deep(8192) + "x.yaml" // 16 KiB
	tests := []struct {
		name    string
		entries []tarEntry
		want    string // "" to accept
	}{
		{"16 KiB path", []tarEntry{{name: "catalog/" + long, data: "x: 1\n"}},
			fmt.Sprintf("path of %d bytes is longer than the limit of 4096 by %d", len(long), len(long)-4096)},
		{"4 KiB path", []tarEntry{{name: "catalog/" + strings.Repeat("a", 4096), data: "x: 1\n"}}, ""},
		{"4 KiB and one", []tarEntry{{name: "catalog/" + strings.Repeat("a", 4097), data: "x: 1\n"}},
			"path of 4097 bytes is longer than the limit of 4096 by 1"},
		{"65 directories", []tarEntry{{name: "catalog/" + deep(65) + "x.yaml", data: "x: 1\n"}},
			"path is 65 directories deep, more than the limit of 64 by 1"},
		{"64 directories", []tarEntry{{name: "catalog/" + deep(64) + "x.yaml", data: "x: 1\n"}}, ""},
		{"directory entry 65 deep", []tarEntry{{name: "catalog/" + deep(65), dir: true}},
			"path is 65 directories deep, more than the limit of 64 by 1"},
		{"directory entry 16 KiB", []tarEntry{{name: "catalog/" + deep(8192), dir: true}},
			"path of 16383 bytes is longer than the limit of 4096 by 12287"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, err := unpack(tarGz(t, tc.entries))
			if tc.want == "" {
				require.NoError(t, err)
				require.NotNil(t, fsys)
				return
			}
			require.ErrorIs(t, err, ErrNotBundle)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
