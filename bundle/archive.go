package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/hopdag/hopdag/release"
)

// Limits on what is read from a bundle, so that a hostile one cannot
// exhaust memory.
const (
	maxManifestSize = 4 << 20   // bytes of manifest JSON
	maxLayerSize    = 64 << 20  // compressed bytes of the layer
	maxCatalogSize  = 256 << 20 // uncompressed bytes of all files
	maxFiles        = 100_000
)

// catalogFiles lists the files of a catalog directory that a bundle holds:
// every YAML file Load reads and every manifest file a ComponentVersion
// names, sorted.
func catalogFiles(fsys fs.FS, c *release.Catalog) ([]string, error) {
	set := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := path.Ext(p); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			set[p] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range c.Components {
		for _, f := range c.Components[i].ManifestFiles() {
			set[f] = true
		}
	}
	files := make([]string, 0, len(set))
	for f := range set {
		files = append(files, f)
	}
	slices.Sort(files)
	return files, nil
}

// pack writes files of fsys as a reproducible tar (sorted, zero times and
// owners, mode 0644) compressed with gzip (no name, no time). Entries are
// under catalog/, the layer's title, as the oras CLI unpacks directories. It returns
// the compressed bytes and the digest of the uncompressed tar.
func pack(fsys fs.FS, files []string) ([]byte, digest.Digest, error) {
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	dirs := map[string]bool{}
	// dir writes the entries of d and its parents (the oras CLI needs them
	// to unpack), each once.
	var dir func(d string) error
	dir = func(d string) error {
		if d == "." || dirs[d] {
			return nil
		}
		dirs[d] = true
		if err := dir(path.Dir(d)); err != nil {
			return err
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: time.Unix(0, 0), Format: tar.FormatPAX})
	}
	for _, f := range files {
		if err := dir(path.Dir(layerTitle + "/" + f)); err != nil {
			return nil, "", err
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, "", err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: layerTitle + "/" + f, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(tarBuf.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), digest.FromBytes(tarBuf.Bytes()), nil
}

// unpack reads a layer written by pack (or by anyone: it is untrusted) into
// an in-memory file system rooted at its catalog/ directory. Only regular
// files and directories are accepted, at valid, clean, relative paths under
// catalog/, each once, within the size and count limits.
func unpack(layer []byte) (fstest.MapFS, error) {
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		return nil, fmt.Errorf("%w: layer is not gzip: %v", ErrNotBundle, err)
	}
	out := fstest.MapFS{}
	tr := tar.NewReader(zr)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: layer is not a tar archive: %v", ErrNotBundle, err)
		}
		name := hdr.Name
		if d, ok := cutSlash(name); ok && hdr.Typeflag == tar.TypeDir {
			name = d
		}
		if !fs.ValidPath(name) || name == "." || path.Clean(name) != name {
			return nil, fmt.Errorf("%w: layer entry %q: not a clean relative path", ErrNotBundle, hdr.Name)
		}
		if name == layerTitle && hdr.Typeflag == tar.TypeDir {
			continue
		}
		name, ok := strings.CutPrefix(name, layerTitle+"/")
		if !ok {
			return nil, fmt.Errorf("%w: layer entry %q is not under %s/", ErrNotBundle, hdr.Name, layerTitle)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("%w: layer entry %q: only regular files are allowed (type %q)", ErrNotBundle, hdr.Name, hdr.Typeflag)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: layer entry %q appears twice", ErrNotBundle, name)
		}
		if len(out) >= maxFiles {
			return nil, fmt.Errorf("%w: layer has more than %d files", ErrNotBundle, maxFiles)
		}
		if hdr.Size < 0 || total+hdr.Size > maxCatalogSize {
			return nil, fmt.Errorf("%w: layer unpacks to more than %d bytes", ErrNotBundle, maxCatalogSize)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, fmt.Errorf("%w: layer entry %q: %v", ErrNotBundle, name, err)
		}
		total += int64(len(data))
		out[name] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	// A file cannot also be a directory of another entry (a and a/b).
	for name := range out {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, clash := out[d]; clash {
				return nil, fmt.Errorf("%w: layer entry %q is a file and the directory of %q", ErrNotBundle, d, name)
			}
		}
	}
	return out, nil
}

func cutSlash(s string) (string, bool) {
	if len(s) > 1 && s[len(s)-1] == '/' {
		return s[:len(s)-1], true
	}
	return s, false
}
