package release

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// maxFileBytes bounds one catalog or manifest file: Load reads at most
// this many bytes and one more of a file, and refuses a larger one.
const maxFileBytes = 64 << 20

// CatalogFiles returns, sorted, the files of fsys that Load reads as
// catalog documents, and the Helm chart directories it skips (a directory
// holding a Chart.yaml): what a copy of the catalog must hold, with the
// manifest files its ComponentVersions name (ComponentVersion.ManifestFiles).
// Unlike Load it stops at the first error reading fsys; a catalog file
// that is not a regular file (or a symbolic link to one) is such an error.
func CatalogFiles(fsys fs.FS) (files, charts []string, err error) {
	var first error
	files, charts, err = walk(fsys, func(p string, err error) {
		if first == nil {
			first = fmt.Errorf("release: reading catalog: %s: %w", p, err)
		}
	})
	if err == nil {
		err = first
	}
	return files, charts, err
}

// walk lists the catalog files and chart directories of fsys, in lexical
// order, and hands what cannot be read to fail: files and directories
// whose name starts with "." are skipped, and so are Helm charts. A
// catalog file that is not a regular file, after resolving a symbolic
// link, goes to fail (a named pipe would block its reader, a link to
// /dev/zero never end).
//
// Cost: one ReadDir per directory and one Stat per directory (for its
// Chart.yaml) and per symbolic link; what each costs is fsys's.
func walk(fsys fs.FS, fail func(p string, err error)) (files, charts []string, err error) {
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fail(p, err)
			return nil
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && p != "." && isChart(fsys, p) {
			charts = append(charts, p)
			return fs.SkipDir // a Helm chart a helm component names: not catalog documents
		}
		if d.IsDir() || !catalogFile(p) {
			return nil
		}
		if t := d.Type(); !t.IsRegular() {
			fi, err := fs.Stat(fsys, p) // resolves a symbolic link
			if err != nil {
				fail(p, err)
				return nil
			}
			if !fi.Mode().IsRegular() {
				fail(p, notRegular(fsys, p, t, fi.Mode()))
				return nil
			}
		}
		files = append(files, p)
		return nil
	})
	return files, charts, err
}

// isChart reports whether directory dir of fsys is a Helm chart: it holds
// a Chart.yaml.
func isChart(fsys fs.FS, dir string) bool {
	fi, err := fs.Stat(fsys, path.Join(dir, "Chart.yaml"))
	return err == nil && !fi.IsDir()
}

// catalogFile reports whether the file at p holds catalog YAML: its
// extension is .yaml or .yml, in any case.
func catalogFile(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".yaml" || ext == ".yml"
}

// readFile reads the file name of fsys: a regular file (or a symbolic
// link to one) of at most maxFileBytes, of which it reads at most
// maxFileBytes+1 bytes whatever its size said. Its type is checked before
// it is opened: opening a named pipe blocks until something writes to it.
func readFile(fsys fs.FS, name string) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fsys, name, 0, fi.Mode())
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Again on the file opened: it may have been replaced since.
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fsys, name, 0, fi.Mode())
	}
	if fi.Size() > maxFileBytes {
		return nil, &fileError{
			msg: fmt.Sprintf("file of %d bytes is larger than the limit of %d (%d MiB) by %d bytes", fi.Size(), maxFileBytes, maxFileBytes>>20, fi.Size()-maxFileBytes),
			fix: "split it into several files",
		}
	}
	var b bytes.Buffer
	b.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := b.ReadFrom(io.LimitReader(f, maxFileBytes+1)); err != nil {
		return nil, err
	}
	if b.Len() > maxFileBytes {
		return nil, &fileError{
			msg: fmt.Sprintf("file is larger than the limit of %d bytes (%d MiB): it gave more while read than the %d bytes its size said", maxFileBytes, maxFileBytes>>20, fi.Size()),
			fix: "load the catalog when nothing writes to it; split a file that large into several",
		}
	}
	return b.Bytes(), nil
}

// fileError is a file Load does not read: not a regular file, or too
// large. Its message and fix become a Problem's (problemOf).
type fileError struct{ msg, fix string }

func (e *fileError) Error() string { return e.msg + "; " + e.fix }

// notRegular is the error of file p of fsys, of type mode (entry, the
// directory entry's type, says whether p is a symbolic link to it).
func notRegular(fsys fs.FS, p string, entry, mode fs.FileMode) error {
	what := typeName(mode)
	if entry&fs.ModeSymlink != 0 {
		what = "a symbolic link to " + what
		if target, err := fs.ReadLink(fsys, p); err == nil {
			what += " (" + target + ")"
		}
	}
	return &fileError{
		msg: "not a regular file but " + what,
		fix: "a catalog reads regular files and symbolic links to them only: remove it, or give it a name that does not end in .yaml or .yml",
	}
}

// typeName names the type of a file that is not a regular file.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file (" + m.Type().String() + ")"
}

// problemOf is the problem of file p that err, of reading it, makes.
func problemOf(p string, err error) Problem {
	var fe *fileError
	if errors.As(err, &fe) {
		return Problem{File: p, Message: fe.msg, Fix: fe.fix}
	}
	return Problem{File: p, Message: err.Error()}
}
