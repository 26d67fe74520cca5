//go:build unix

package release_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// fifo makes a named pipe at p. opened, called once the test is done
// with it, reports whether anything opened it for reading: a goroutine
// waits to open it for writing, which blocks until a reader opens it
// (the reader then reads nothing and ends), and opened unblocks it
// otherwise with a reader of its own.
func fifo(t *testing.T, p string) (opened func() bool) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(p, 0o644))
	var released atomic.Bool
	done := make(chan bool, 1)
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			done <- false
			return
		}
		byReader := !released.Load() // read before Close, which lets the reader go on
		f.Close()
		done <- byReader
	}()
	return func() bool {
		released.Store(true)
		if r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer r.Close()
		}
		return <-done
	}
}

// TestLoadDirIrregularFiles: a named pipe called *.yaml in a catalog
// directory blocked LoadDir for good, and a symbolic link to /dev/zero
// read without end. Only regular files are read (after resolving a link);
// any other is a problem naming the file and its type, and is not opened.
func TestLoadDirIrregularFiles(t *testing.T) {
	rel := doc("Release", "r", "  version: v1.0\n  components: [{name: etcd, version: 3.5.21}]\n") +
		"---\n" + doc("ComponentVersion", "etcd", "  name: etcd\n  version: v3.5.21\n  handler: etcd\n")
	const fix = "; a catalog reads regular files and symbolic links to them only: remove it, or give it a name that does not end in .yaml or .yml"
	tests := []struct {
		name string
		make func(t *testing.T, dir string) (opened func() bool)
		want string // the problem, "" for none
	}{
		{"named pipe", func(t *testing.T, dir string) func() bool {
			return fifo(t, filepath.Join(dir, "pipe.yaml"))
		}, "pipe.yaml: not a regular file but a named pipe (FIFO)" + fix},
		{"link to a named pipe", func(t *testing.T, dir string) func() bool {
			opened := fifo(t, filepath.Join(dir, "pipe"))
			require.NoError(t, os.Symlink("pipe", filepath.Join(dir, "pipe.yml")))
			return opened
		}, "pipe.yml: not a regular file but a symbolic link to a named pipe (FIFO) (pipe)" + fix},
		{"link to /dev/zero", func(t *testing.T, dir string) func() bool {
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")))
			return nil
		}, "zero.yaml: not a regular file but a symbolic link to a character device (/dev/zero)" + fix},
		{"link to a directory", func(t *testing.T, dir string) func() bool {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
			require.NoError(t, os.Symlink("d", filepath.Join(dir, "d.yaml")))
			return nil
		}, "d.yaml: not a regular file but a symbolic link to a directory (d)" + fix},
		{"link to a regular file", func(t *testing.T, dir string) func() bool {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "r.txt"), []byte(rel), 0o644))
			require.NoError(t, os.Remove(filepath.Join(dir, "r.yaml")))
			require.NoError(t, os.Symlink("r.txt", filepath.Join(dir, "r.yaml")))
			return nil
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(rel), 0o644))
			opened := tc.make(t, dir)
			c, err := release.LoadDir(dir)
			if opened != nil {
				assert.False(t, opened(), "LoadDir opened the named pipe")
			}
			if tc.want == "" {
				require.NoError(t, err)
				assert.Len(t, c.Releases, 1, "releases loaded")
				return
			}
			assert.EqualError(t, err, "release: invalid catalog: 1 problem\n  "+tc.want)
			_, _, err = release.CatalogFiles(os.DirFS(dir))
			assert.EqualError(t, err, "release: reading catalog: "+tc.want, "CatalogFiles")
		})
	}
}

// TestLoadDirFileCap: a file larger than the 64 MiB per-file cap is
// refused by its size, saying by how much, and not read.
func TestLoadDirFileCap(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "big.yaml"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(64<<20+10)) // sparse: no disk used
	require.NoError(t, f.Close())
	_, err = release.LoadDir(dir)
	assert.EqualError(t, err, "release: invalid catalog: 1 problem\n"+
		"  big.yaml: file of 67108874 bytes is larger than the limit of 67108864 (64 MiB) by 10 bytes; split it into several files")
}
