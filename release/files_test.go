package release_test

import (
	"io"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// growingFS holds one regular file, big.yaml, whose Stat says 10 bytes
// but which gives 'a's until it gave size bytes (a file written to while
// Load reads it), and counts the bytes read.
type growingFS struct {
	size int64
	read *int64
}

func (g growingFS) Open(name string) (fs.File, error) {
	switch name {
	case ".":
		return fstest.MapFS{"big.yaml": {Data: make([]byte, 10)}}.Open(".")
	case "big.yaml":
		return &growingFile{g: g}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

type growingFile struct{ g growingFS }

func (f *growingFile) Stat() (fs.FileInfo, error) { return growingInfo{}, nil }
func (f *growingFile) Close() error               { return nil }
func (f *growingFile) Read(p []byte) (int, error) {
	left := f.g.size - *f.g.read
	if left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), left))
	for i := range n {
		p[i] = 'a'
	}
	*f.g.read += int64(n)
	return n, nil
}

type growingInfo struct{}

func (growingInfo) Name() string       { return "big.yaml" }
func (growingInfo) Size() int64        { return 10 }
func (growingInfo) Mode() fs.FileMode  { return 0o444 }
func (growingInfo) ModTime() time.Time { return time.Time{} }
func (growingInfo) IsDir() bool        { return false }
func (growingInfo) Sys() any           { return nil }

// TestLoadReadsAtMostFileCap: a file that gives more than its size said
// is read up to the 64 MiB per-file cap and one byte, then refused.
func TestLoadReadsAtMostFileCap(t *testing.T) {
	const limit = 64 << 20
	var read int64
	_, err := release.Load(growingFS{size: 2 * limit, read: &read})
	assert.LessOrEqual(t, read, int64(limit+1), "bytes read of a file that gives %d", 2*limit)
	assert.EqualError(t, err, "release: invalid catalog: 1 problem\n"+
		"  big.yaml: file is larger than the limit of 67108864 bytes (64 MiB): it gave more while read than the 10 bytes its size said; load the catalog when nothing writes to it; split a file that large into several")
}

// TestLoadIrregularManifest: a manifest file that is not a regular file
// is refused where a ComponentVersion names it, with its type.
func TestLoadIrregularManifest(t *testing.T) {
	fsys := fstest.MapFS{
		"r.yaml":      {Data: []byte(doc("Release", "r", "  version: v1.0\n  components: [{name: app, version: 1.0.0}]\n"))},
		"app.yaml":    {Data: []byte(doc("ComponentVersion", "app", "  name: app\n  version: v1.0.0\n  manifests: [{file: m/app.tmpl}]\n"))},
		"m/app.tmpl":  {Data: []byte("kind: ConfigMap"), Mode: fs.ModeNamedPipe},
		"pipe.yaml":   {Data: []byte("irrelevant"), Mode: fs.ModeNamedPipe},
		"socket.yaml": {Data: []byte("irrelevant"), Mode: fs.ModeSocket},
	}
	_, err := release.Load(fsys)
	require.Error(t, err)
	assert.EqualError(t, err, "release: invalid catalog: 3 problems\n"+
		"  app.yaml:8: spec.manifests[0].file: manifest file m/app.tmpl is not a regular file but a named pipe (FIFO); a manifest is read from a regular file (or a symbolic link to one): name another file, or use template for inline YAML\n"+
		"  pipe.yaml: not a regular file but a named pipe (FIFO); a catalog reads regular files and symbolic links to them only: remove it, or give it a name that does not end in .yaml or .yml\n"+
		"  socket.yaml: not a regular file but a socket; a catalog reads regular files and symbolic links to them only: remove it, or give it a name that does not end in .yaml or .yml")
}
