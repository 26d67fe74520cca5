package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// tarEntry is a file of a test layer: a regular file, a symbolic link
// (link) or a directory (dir).
type tarEntry struct {
	name, data, link string
	dir              bool
}

func tarGz(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}
		switch {
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, e.link, 0
		case e.dir:
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		}
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := tw.Write([]byte(e.data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// FuzzManifest feeds arbitrary manifest JSON to the parser: no panic, and
// an accepted manifest has exactly one catalog layer within the limits.
func FuzzManifest(f *testing.F) {
	layer := tarGz(f, []tarEntry{{name: "a.yaml", data: "x: 1"}})
	m, err := newManifest(&release.Catalog{}, layer, digest.FromString("x"))
	require.NoError(f, err)
	f.Add(m)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.hopdag.catalog.v1","layers":[]}`))
	f.Add([]byte(`{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.hopdag.catalog.v1.tar+gzip","digest":"sha256:x","size":-1}]}`))
	f.Add([]byte(`{} {}`))
	f.Add([]byte(`null`))
	// Issue 25, point 6: what the manifest alone shows is refused before
	// anything else is fetched: four layers of 40 MiB, a layer or a
	// config declared over its limit.
	head := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.hopdag.catalog.v1",` +
		`"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},`
	declared := func(size int) string {
		return fmt.Sprintf(`{"mediaType":"application/vnd.hopdag.catalog.v1.tar+gzip","digest":"sha256:%064d","size":%d}`, 0, size)
	}
	four := []string{declared(40 << 20), declared(40 << 20), declared(40 << 20), declared(40 << 20)}
	f.Add([]byte(head + `"layers":[` + strings.Join(four, ",") + `]}`))
	f.Add([]byte(head + `"layers":[` + declared(maxLayerSize+1) + `]}`))
	f.Add([]byte(strings.Replace(head, `"size":2}`, fmt.Sprintf(`"size":%d}`, maxConfigSize+1), 1) + `"layers":[` + declared(100) + `]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, l, err := parseManifest(data)
		if err != nil {
			return
		}
		if l.MediaType != LayerMediaType || l.Size < 0 || l.Size > maxLayerSize || l.Digest.Validate() != nil {
			t.Fatalf("parseManifest accepted layer %+v", l)
		}
	})
}

// FuzzLayer feeds arbitrary layer bytes to unpack and the loader: no
// panic, and every unpacked path is valid.
func FuzzLayer(f *testing.F) {
	releases, err := os.ReadFile("../testdata/catalog/releases.yaml")
	require.NoError(f, err)
	f.Add(tarGz(f, []tarEntry{{name: "catalog/releases.yaml", data: string(releases)}}))
	f.Add(tarGz(f, []tarEntry{{name: "catalog/a/b.yaml", data: "apiVersion: hopdag.io/v1alpha1\nkind: Release\n"}, {name: "../c", data: "x"}}))
	f.Add(tarGz(f, []tarEntry{{name: "catalog/x.yaml", link: "y"}}))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	// Issue 25, point 5: deep paths (refused past 4 KiB or 64 directories).
	f.Add(tarGz(f, []tarEntry{{name: "catalog/" + strings.Repeat("a/", 8192) + "x.yaml", data: "x: 1\n"}}))
	f.Add(tarGz(f, []tarEntry{{name: "catalog/" + strings.Repeat("a/", 64) + "x.yaml", data: "x: 1\n"}}))
	f.Add(tarGz(f, []tarEntry{{name: "catalog/" + strings.Repeat("a/", 65), dir: true}}))
	// Point 4: a named pipe called *.yaml (refused: not a regular file).
	var fifo bytes.Buffer
	zw := gzip.NewWriter(&fifo)
	tw := tar.NewWriter(zw)
	require.NoError(f, tw.WriteHeader(&tar.Header{Name: "catalog/pipe.yaml", Typeflag: tar.TypeFifo, Mode: 0o644}))
	require.NoError(f, tw.Close())
	require.NoError(f, zw.Close())
	f.Add(fifo.Bytes())
	// Point 7: directory entries count as entries and bytes.
	dirs := make([]tarEntry, 1000)
	for i := range dirs {
		dirs[i] = tarEntry{name: "catalog/" + strconv.Itoa(i) + "/", dir: true}
	}
	f.Add(tarGz(f, dirs))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys, err := unpack(data)
		if err != nil {
			return
		}
		err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatalf("walking what unpack accepted: %v", err)
			}
			if !fs.ValidPath(name) || len(name) > maxPathBytes || strings.Count(name, "/") > maxPathDepth {
				t.Fatalf("unpack accepted path %q (%d bytes), want a valid path within %d bytes and %d directories", name, len(name), maxPathBytes, maxPathDepth)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = release.Load(fsys)
	})
}
