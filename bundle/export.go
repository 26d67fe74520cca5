package bundle

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
)

// Export writes the bundle ref points to, with its signatures, to an OCI
// image layout: a directory, or a tarball of one when path ends in .tar.
// The layout is tagged with ref's tag (if any), so that
// oci-layout://PATH:TAG (or oci-layout://PATH when it holds one tag) loads
// it with no registry. The bundle is verified (as by Pull) before it is
// written. Export returns what was exported, without loading its catalog.
func (c *Client) Export(ctx context.Context, ref, path string) (*Bundle, error) {
	b, _, src, err := c.fetch(ctx, "export", ref)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Bundle, error) {
		return nil, &Error{Op: "export", Ref: ref, Digest: b.Digest.String(), Err: err}
	}
	loc, _ := ParseLocation(ref)
	dir, tarball := path, strings.HasSuffix(path, ".tar")
	if tarball {
		if dir, err = os.MkdirTemp(filepath.Dir(path), ".hopdag-export-"); err != nil {
			return fail(err)
		}
		defer os.RemoveAll(dir)
	}
	dst, err := oci.NewWithContext(ctx, dir)
	if err != nil {
		return fail(err)
	}
	tag := loc.Tag
	if tag == "" {
		tag = b.Digest.String()
	}
	if _, err := oras.ExtendedCopy(ctx, src, b.Digest.String(), dst, tag, oras.ExtendedCopyOptions{}); err != nil {
		return fail(err)
	}
	if tarball {
		if err := tarDir(dir, path); err != nil {
			return fail(err)
		}
	}
	return b, nil
}

// Copy copies the bundle src points to, with its signatures, to dst (a
// registry repository or an OCI layout; its tag, or src's when dst has
// none): prepare online, load into the bootstrap node's registry. The
// bundle is verified (as by Pull) before it is copied.
func (c *Client) Copy(ctx context.Context, src, dst string) (*Bundle, error) {
	b, _, from, err := c.fetch(ctx, "copy", src)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Bundle, error) {
		return nil, &Error{Op: "copy", Ref: dst, Digest: b.Digest.String(), Err: err}
	}
	sloc, _ := ParseLocation(src)
	dloc, err := parseLocation(dst, true)
	if err != nil {
		return nil, err
	}
	tag := dloc.Tag
	if tag == "" {
		tag = sloc.Tag
	}
	if tag == "" {
		tag = b.Digest.String()
	}
	var to oras.Target
	if dloc.Layout != "" {
		to, err = oci.NewWithContext(ctx, dloc.Layout)
	} else {
		to, err = c.repository(dloc)
	}
	if err != nil {
		return fail(err)
	}
	if _, err := oras.ExtendedCopy(ctx, from, b.Digest.String(), to, tag, oras.ExtendedCopyOptions{}); err != nil {
		return fail(explainPush(err, dloc))
	}
	return b, nil
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
	tmp, err := os.CreateTemp(filepath.Dir(out), ".hopdag-export-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
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
