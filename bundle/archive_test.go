package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
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

// TestUnpackCountsEveryEntry: directory entries were not counted, so a
// 0.9 MB layer of directory headers (195 MB of tar) was read to its end.
// Every entry counts against the entry limit, and every byte of the tar,
// headers included, against the byte limit.
func TestUnpackCountsEveryEntry(t *testing.T) {
	dirs := func(n int) []tarEntry {
		out := make([]tarEntry, n)
		for i := range out {
			out[i] = tarEntry{name: fmt.Sprintf("catalog/d%06d/", i), dir: true}
		}
		return out
	}
	t.Run("entries", func(t *testing.T) {
		_, err := unpack(tarGz(t, dirs(maxEntries+1)))
		require.ErrorIs(t, err, ErrNotBundle)
		assert.ErrorContains(t, err, "layer has more than the limit of 100000 entries (files and directories)")
	})
	t.Run("bytes", func(t *testing.T) {
		// 2,000 directories (1 MB of headers), then a file whose size fits
		// the limit only if headers are not counted; its content is left
		// out: the size alone must refuse it.
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, e := range dirs(2000) {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeDir, Mode: 0o755}))
		}
		size := int64(maxCatalogSize - 1000*512)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "catalog/big.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: size}))
		require.NoError(t, zw.Close())
		_, err := unpack(buf.Bytes())
		require.ErrorIs(t, err, ErrNotBundle)
		over := 2001*512 + size - maxCatalogSize
		assert.ErrorContains(t, err, fmt.Sprintf(`layer unpacks to more than the limit of 268435456 bytes (256 MiB) of tar, headers included: entry "catalog/big.yaml" of %d bytes ends %d bytes past it`, size, over))
	})
}

// TestCatalogFilesRefusesIrregularChartFiles: a chart is packed whole, and
// a named pipe in it blocked bundle push for good (a catalog's own files
// are release.CatalogFiles', which refuses them). Every file of a chart
// must be a regular file or a symbolic link to one.
func TestCatalogFilesRefusesIrregularChartFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		want string
	}{
		{"named pipe", fs.ModeNamedPipe, "chart charts/app: charts/app/templates/pipe is a named pipe (FIFO), not a regular file: a bundle holds regular files; remove it from the chart"},
		{"socket", fs.ModeSocket, "chart charts/app: charts/app/templates/pipe is a socket, not a regular file: a bundle holds regular files; remove it from the chart"},
		{"device", fs.ModeDevice | fs.ModeCharDevice, "chart charts/app: charts/app/templates/pipe is a character device, not a regular file: a bundle holds regular files; remove it from the chart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"charts/app/Chart.yaml":     {Data: []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n")},
				"charts/app/templates/pipe": {Mode: tc.mode},
			}
			_, err := catalogFiles(fsys, &release.Catalog{})
			assert.EqualError(t, err, tc.want)
		})
	}
}
