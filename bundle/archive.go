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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/hopdag/hopdag/release"
)

// Limits on what is read from a bundle, so that a hostile one cannot
// exhaust memory.
const (
	maxManifestSize = 4 << 20  // bytes of manifest JSON
	maxLayerSize    = 64 << 20 // compressed bytes of the layer
	maxConfigSize   = 4 << 10  // bytes of the config (a bundle's is the empty JSON, {})
	// maxCatalogSize bounds the uncompressed tar of the layer, headers
	// and padding included, and maxEntries its entries: files and
	// directories alike (a layer of directory headers costs as much to
	// read as one of files).
	maxCatalogSize = 256 << 20
	maxEntries     = 100_000
	// A path in the catalog (without catalog/) is at most maxPathBytes
	// long and maxPathDepth directories deep (a file's directories; a
	// directory counts itself): a deep path costs every walk of the
	// catalog once per directory.
	maxPathBytes = 4096
	maxPathDepth = 64
)

// catalogFiles lists, sorted, the files of a catalog directory that a
// bundle holds: the catalog documents Load reads (release.CatalogFiles:
// hidden files and directories are not among them), every manifest file a
// ComponentVersion names, and the local Helm charts: every file of each
// chart directory Load skips, and the chart directory or archive a helm
// component names by a catalog-relative path. A chart is packed whole,
// hidden files included (Helm reads a chart's .helmignore and applies it
// itself). A named local chart that is not in fsys is an error: the bundle
// would hold a catalog whose chart is gone. An absolute chart path names a
// file of the machine that runs the upgrade, not of the catalog, and is
// left alone.
func catalogFiles(fsys fs.FS, c *release.Catalog) ([]string, error) {
	docs, charts, err := release.CatalogFiles(fsys)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, f := range docs {
		set[f] = true
	}
	for _, d := range charts {
		if err := addTree(fsys, d, set); err != nil {
			return nil, err
		}
	}
	for i := range c.Components {
		cv := &c.Components[i]
		for _, f := range cv.ManifestFiles() {
			set[f] = true
		}
		chart, ok := localChart(cv)
		if !ok {
			continue
		}
		if !fs.ValidPath(chart) {
			return nil, fmt.Errorf("%s: helm chart %s is outside the catalog directory: a bundle holds only the catalog's files; move the chart into the catalog or give it as oci:// or a repository chart", cv.Key(), cv.Helm.Chart)
		}
		fi, err := fs.Stat(fsys, chart)
		if err != nil {
			return nil, fmt.Errorf("%s: helm chart %s is not in the catalog directory (%w): a bundle must hold the local charts its helm components name", cv.Key(), cv.Helm.Chart, err)
		}
		if !fi.IsDir() {
			set[chart] = true
		} else if err := addTree(fsys, chart, set); err != nil {
			return nil, err
		}
	}
	files := make([]string, 0, len(set))
	for f := range set {
		files = append(files, f)
	}
	slices.Sort(files)
	return files, nil
}

// localChart is the cleaned catalog-relative path of cv's Helm chart, when
// it is one: not an oci:// reference, not a chart name in a repository,
// not an absolute path (as kube/helm resolves charts).
func localChart(cv *release.ComponentVersion) (string, bool) {
	h := cv.Helm
	if h == nil || h.Chart == "" || h.Repo != "" || strings.HasPrefix(h.Chart, "oci://") ||
		path.IsAbs(h.Chart) || filepath.IsAbs(h.Chart) {
		return "", false
	}
	return path.Clean(filepath.ToSlash(h.Chart)), true
}

// addTree adds every file under directory dir of fsys to set, whatever its
// name.
func addTree(fsys fs.FS, dir string, set map[string]bool) error {
	return fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading chart %s: %w", dir, err)
		}
		if d.IsDir() {
			return nil
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			// Packed as the file it points to; a link to a directory
			// cannot be (a bundle holds regular files).
			if fi, err := fs.Stat(fsys, p); err != nil || !fi.Mode().IsRegular() {
				return fmt.Errorf("chart %s: %s is a symbolic link to a directory, to nothing or to no regular file: a bundle holds regular files; copy what it points to", dir, p)
			}
		case !t.IsRegular():
			// Reading a named pipe would block for good, a device never end.
			return fmt.Errorf("chart %s: %s is %s, not a regular file: a bundle holds regular files; remove it from the chart", dir, p, fileType(t))
		}
		set[p] = true
		return nil
	})
}

// fileType names the type t of a file that is not a regular file.
func fileType(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a device"
	}
	return "an irregular file (" + t.String() + ")"
}

// pack writes files of fsys as a reproducible tar (sorted, zero times and
// owners, mode 0644) compressed with gzip (no name, no time). Entries are
// under catalog/, the layer's title, as the oras CLI unpacks directories. It returns
// the compressed bytes and the digest of the uncompressed tar.
func pack(fsys fs.FS, files []string) ([]byte, digest.Digest, error) {
	if len(files) > maxEntries {
		return nil, "", fmt.Errorf("the catalog has %d files, more than the %d a bundle may hold (by %d)", len(files), maxEntries, len(files)-maxEntries)
	}
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	dirs := map[string]bool{}
	var size int64
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
		if err := checkPath(f, false); err != nil {
			return nil, "", fmt.Errorf("file %s: %w: a bundle holds paths of at most %d bytes and %d directories; move it up or shorten its name", quoteEntry(f), err, maxPathBytes, maxPathDepth)
		}
		if err := dir(path.Dir(layerTitle + "/" + f)); err != nil {
			return nil, "", err
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, "", err
		}
		if size += int64(len(data)); size > maxCatalogSize {
			return nil, "", fmt.Errorf("the catalog's files hold more than the %d bytes a bundle may hold", maxCatalogSize)
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
	if len(dirs)+len(files) > maxEntries {
		return nil, "", fmt.Errorf("the catalog has %d files and directories, more than the %d a bundle may hold (by %d)", len(dirs)+len(files), maxEntries, len(dirs)+len(files)-maxEntries)
	}
	if tarBuf.Len() > maxCatalogSize {
		return nil, "", fmt.Errorf("the catalog packs to a tar of %d bytes, more than the %d (%d MiB) a bundle may hold (by %d)", tarBuf.Len(), maxCatalogSize, maxCatalogSize>>20, tarBuf.Len()-maxCatalogSize)
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
// a read-only file system rooted at its catalog/ directory (a tree). Only
// regular files and directories are accepted, at valid, clean, relative
// paths under catalog/, each once, within the size, count and path limits.
func unpack(layer []byte) (fs.FS, error) {
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		return nil, fmt.Errorf("%w: layer is not gzip: %v", ErrNotBundle, err)
	}
	out := newTree()
	// Every byte of the tar is counted (cr), and every entry.
	cr := &countReader{r: zr, left: maxCatalogSize}
	tr := tar.NewReader(cr)
	for entries := 0; ; entries++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errTooLarge) {
			return nil, tooLarge("")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: layer is not a tar archive: %v", ErrNotBundle, err)
		}
		if entries == maxEntries {
			return nil, fmt.Errorf("%w: layer has more than the limit of %d entries (files and directories)", ErrNotBundle, maxEntries)
		}
		name := hdr.Name
		if d, ok := cutSlash(name); ok && hdr.Typeflag == tar.TypeDir {
			name = d
		}
		if !fs.ValidPath(name) || name == "." || path.Clean(name) != name {
			return nil, fmt.Errorf("%w: layer entry %s: not a clean relative path", ErrNotBundle, quoteEntry(hdr.Name))
		}
		if name == layerTitle && hdr.Typeflag == tar.TypeDir {
			continue
		}
		name, ok := strings.CutPrefix(name, layerTitle+"/")
		if !ok {
			return nil, fmt.Errorf("%w: layer entry %s is not under %s/", ErrNotBundle, quoteEntry(hdr.Name), layerTitle)
		}
		if err := checkPath(name, hdr.Typeflag == tar.TypeDir); err != nil {
			return nil, fmt.Errorf("%w: layer entry %s: %v", ErrNotBundle, quoteEntry(hdr.Name), err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := out.addDir(name); err != nil {
				return nil, err
			}
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("%w: layer entry %s: only regular files are allowed (type %q)", ErrNotBundle, quoteEntry(hdr.Name), hdr.Typeflag)
		}
		if hdr.Size < 0 {
			return nil, fmt.Errorf("%w: layer entry %s: size %d", ErrNotBundle, quoteEntry(hdr.Name), hdr.Size)
		}
		if hdr.Size > cr.left {
			return nil, tooLarge(fmt.Sprintf(": entry %s of %d bytes ends %d bytes past it", quoteEntry(hdr.Name), hdr.Size, hdr.Size-cr.left))
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, fmt.Errorf("%w: layer entry %s: %v", ErrNotBundle, quoteEntry(hdr.Name), err)
		}
		if err := out.addFile(name, data); err != nil {
			return nil, err
		}
	}
	out.sort()
	return out, nil
}

// countReader reads from r at most left bytes, then fails with
// errTooLarge.
type countReader struct {
	r    io.Reader
	left int64
}

var errTooLarge = errors.New("too large")

func (c *countReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func tooLarge(detail string) error {
	return fmt.Errorf("%w: layer unpacks to more than the limit of %d bytes (%d MiB) of tar, headers included%s", ErrNotBundle, maxCatalogSize, maxCatalogSize>>20, detail)
}

// checkPath checks the path p of a file (or of a directory: dir) of a
// catalog against the limits of a bundle.
func checkPath(p string, dir bool) error {
	if len(p) > maxPathBytes {
		return fmt.Errorf("path of %d bytes is longer than the limit of %d by %d", len(p), maxPathBytes, len(p)-maxPathBytes)
	}
	depth := strings.Count(p, "/")
	if dir {
		depth++
	}
	if depth > maxPathDepth {
		return fmt.Errorf("path is %d directories deep, more than the limit of %d by %d", depth, maxPathDepth, depth-maxPathDepth)
	}
	return nil
}

// quoteEntry quotes a layer entry's name for an error, its first 200
// bytes of a longer one.
func quoteEntry(name string) string {
	const max = 200
	if len(name) <= max {
		return strconv.Quote(name)
	}
	return strconv.Quote(name[:max]) + fmt.Sprintf("... (%d bytes)", len(name))
}

func cutSlash(s string) (string, bool) {
	if len(s) > 1 && s[len(s)-1] == '/' {
		return s[:len(s)-1], true
	}
	return s, false
}
