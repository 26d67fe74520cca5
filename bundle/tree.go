package bundle

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// tree is the read-only file system of an unpacked layer (Bundle.Files):
// its files and the directories above them, by path. Open, Stat and
// ReadDir cost a map lookup and the size of what they return, so walking
// the tree (release.Load does, stat-ing a Chart.yaml in each directory) is
// linear in its size; fstest.MapFS lists a directory by scanning every
// file, and a walk of it costs directories times files.
type tree map[string]*treeNode

// treeNode is a file (data) or a directory (dir, its entries in kids,
// sorted by name once the tree is built).
type treeNode struct {
	name string // base name; "." for the root
	dir  bool
	data []byte
	kids []*treeNode
}

func newTree() tree { return tree{".": {name: ".", dir: true}} }

// addFile adds the file at p (a valid path) and the directories above
// it, or says why it cannot: p is there already, as a file or a
// directory, or a file is where a directory above it must be.
func (t tree) addFile(p string, data []byte) error {
	if n, ok := t[p]; ok {
		if n.dir {
			of := p + "/"
			if len(n.kids) > 0 {
				of += n.kids[0].name
			}
			return fileAndDir(p, of)
		}
		return fmt.Errorf("%w: layer entry %q appears twice", ErrNotBundle, p)
	}
	n := &treeNode{name: p[strings.LastIndexByte(p, '/')+1:], data: data}
	if err := t.link(p, n); err != nil {
		return err
	}
	t[p] = n
	return nil
}

// addDir adds the directory at p and those above it, or says why it
// cannot: a file is at p or above it.
func (t tree) addDir(p string) error {
	if n, ok := t[p]; ok {
		if !n.dir {
			return fileAndDir(p, p+"/")
		}
		return nil
	}
	n := &treeNode{name: p[strings.LastIndexByte(p, '/')+1:], dir: true}
	if err := t.link(p, n); err != nil {
		return err
	}
	t[p] = n
	return nil
}

func fileAndDir(file, of string) error {
	return fmt.Errorf("%w: layer entry %q is a file and the directory of %q", ErrNotBundle, file, of)
}

// link makes n, at p, an entry of its directory, adding the directories
// above it that are missing. Each step up looks at one path element only,
// and stops at the first directory there: adding a path costs its length.
func (t tree) link(p string, n *treeNode) error {
	for {
		i := strings.LastIndexByte(p, '/')
		dir := "."
		if i >= 0 {
			dir = p[:i]
		}
		parent, ok := t[dir]
		if ok {
			if !parent.dir {
				return fileAndDir(dir, p)
			}
			parent.kids = append(parent.kids, n)
			return nil
		}
		parent = &treeNode{name: dir[strings.LastIndexByte(dir, '/')+1:], dir: true, kids: []*treeNode{n}}
		t[dir] = parent
		p, n = dir, parent
	}
}

// sort orders the entries of every directory by name.
func (t tree) sort() {
	for _, n := range t {
		if len(n.kids) > 1 {
			slices.SortFunc(n.kids, func(a, b *treeNode) int { return strings.Compare(a.name, b.name) })
		}
	}
}

func (t tree) lookup(op, name string) (*treeNode, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	n, ok := t[name]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

// Open opens the file or directory name.
func (t tree) Open(name string) (fs.File, error) {
	n, err := t.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return &treeDir{n: n}, nil
	}
	return &treeFile{n: n, r: bytes.NewReader(n.data)}, nil
}

// Stat describes name.
func (t tree) Stat(name string) (fs.FileInfo, error) {
	n, err := t.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return treeInfo{n}, nil
}

// ReadDir lists directory name, sorted by name.
func (t tree) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := t.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	out := make([]fs.DirEntry, len(n.kids))
	for i, k := range n.kids {
		out[i] = treeInfo{k}
	}
	return out, nil
}

// ReadFile returns a copy of file name's content.
func (t tree) ReadFile(name string) ([]byte, error) {
	n, err := t.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return slices.Clone(n.data), nil
}

// treeInfo is a node's fs.FileInfo and fs.DirEntry: files read-only
// (0444), directories 0555.
type treeInfo struct{ n *treeNode }

func (i treeInfo) Name() string               { return i.n.name }
func (i treeInfo) Size() int64                { return int64(len(i.n.data)) }
func (i treeInfo) ModTime() time.Time         { return time.Time{} }
func (i treeInfo) IsDir() bool                { return i.n.dir }
func (i treeInfo) Sys() any                   { return nil }
func (i treeInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i treeInfo) Info() (fs.FileInfo, error) { return i, nil }
func (i treeInfo) Mode() fs.FileMode {
	if i.n.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type treeFile struct {
	n *treeNode
	r *bytes.Reader
}

func (f *treeFile) Stat() (fs.FileInfo, error)                { return treeInfo{f.n}, nil }
func (f *treeFile) Read(p []byte) (int, error)                { return f.r.Read(p) }
func (f *treeFile) ReadAt(p []byte, off int64) (int, error)   { return f.r.ReadAt(p, off) }
func (f *treeFile) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }
func (f *treeFile) Close() error                              { return nil }

type treeDir struct {
	n   *treeNode
	off int // entries ReadDir returned
}

func (d *treeDir) Stat() (fs.FileInfo, error) { return treeInfo{d.n}, nil }
func (d *treeDir) Close() error               { return nil }
func (d *treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.n.name, Err: fs.ErrInvalid}
}

// ReadDir returns the next n entries (all that are left for n <= 0).
func (d *treeDir) ReadDir(n int) ([]fs.DirEntry, error) {
	left := d.n.kids[d.off:]
	if n > 0 && len(left) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(left) {
		left = left[:n]
	}
	out := make([]fs.DirEntry, len(left))
	for i, k := range left {
		out[i] = treeInfo{k}
	}
	d.off += len(left)
	return out, nil
}
