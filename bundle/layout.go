package bundle

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
)

// isTarball reports whether an OCI layout path names a tarball: it ends in
// .tar and is not a directory.
func isTarball(p string) bool {
	if !strings.HasSuffix(p, ".tar") {
		return false
	}
	fi, err := os.Stat(p)
	return err != nil || !fi.IsDir()
}

// updateLayout runs write on the OCI image layout at p, created if missing:
// a directory, or a tarball of one when p ends in .tar. A tarball is
// unpacked into a temporary directory beside it (what it holds, its other
// tags, is kept), written there, and packed again into p through a
// temporary file renamed into place: a failure leaves p as it was.
func updateLayout(ctx context.Context, p string, write func(oras.GraphTarget) error) error {
	if !isTarball(p) {
		s, err := oci.NewWithContext(ctx, p)
		if err != nil {
			return err
		}
		return write(s)
	}
	dir, err := os.MkdirTemp(filepath.Dir(p), ".hopdag-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := untarLayout(p, dir); err != nil {
		return fmt.Errorf("reading the OCI layout tarball %s: %w", p, err)
	}
	s, err := oci.NewWithContext(ctx, dir)
	if err != nil {
		return fmt.Errorf("the OCI layout tarball %s: %w", p, err)
	}
	if err := write(s); err != nil {
		return err
	}
	return tarDir(dir, p)
}

// untarLayout unpacks the tarball of an OCI layout at p, if there is one,
// into dir: directories and regular files only, at clean relative paths.
func untarLayout(p, dir string) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." {
			continue
		}
		if !fs.ValidPath(name) {
			return fmt.Errorf("%q is not a clean relative path", hdr.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, tr)
		default:
			err = fmt.Errorf("%s: only directories and regular files may be in an OCI layout tarball", hdr.Name)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(p string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tarDir writes the files under dir into a tarball at out, sorted, with
// zero times, through a temporary file renamed into place.
func tarDir(dir, out string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	tmp, err := os.CreateTemp(filepath.Dir(out), ".hopdag-layout-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	tw := tar.NewWriter(tmp)
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o644, Size: fi.Size(), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}
