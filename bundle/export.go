package bundle

import (
	"context"

	"oras.land/oras-go/v2"
)

// Export writes the bundle ref points to, with its signatures, to an OCI
// image layout: a directory, or a tarball of one when path ends in .tar
// (an existing layout keeps what it holds: its other tags). The layout is
// tagged with ref's tag (if any), so that oci-layout://PATH:TAG (or
// oci-layout://PATH when it holds one tag) loads it with no registry. The bundle is verified (as by Pull) before it is
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
	tag := loc.Tag
	if tag == "" {
		tag = b.Digest.String()
	}
	if err := updateLayout(ctx, path, func(dst oras.GraphTarget) error {
		_, err := oras.ExtendedCopy(ctx, src, b.Digest.String(), dst, tag, oras.ExtendedCopyOptions{})
		return err
	}); err != nil {
		return fail(err)
	}
	return b, nil
}

// Copy copies the bundle src points to, with its signatures, to dst (a
// registry repository, or an OCI layout written as Export writes one; its
// tag, or src's when dst has none): prepare online, load into the
// bootstrap node's registry. The
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
	err = c.writeTo(ctx, dloc, func(to oras.GraphTarget) error {
		_, err := oras.ExtendedCopy(ctx, from, b.Digest.String(), to, tag, oras.ExtendedCopyOptions{})
		return err
	})
	if err != nil {
		return fail(explainPush(err, dloc))
	}
	return b, nil
}
