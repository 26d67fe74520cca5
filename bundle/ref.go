package bundle

import (
	"fmt"
	"net"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
)

// Reference schemes.
const (
	SchemeOCI    = "oci://"
	SchemeLayout = "oci-layout://"
)

// Location is a parsed reference: a repository in a registry, or an OCI
// image layout (a directory or a .tar of one), with a tag, a digest or both.
type Location struct {
	// Raw is the reference as given.
	Raw string
	// Layout is the layout's path; empty for a registry.
	Layout string
	// Registry and Repository name a registry's repository.
	Registry, Repository string
	Tag                  string
	Digest               digest.Digest
}

// IsReference reports whether s is a bundle reference (oci:// or
// oci-layout://) rather than a catalog directory.
func IsReference(s string) bool {
	return strings.HasPrefix(s, SchemeOCI) || strings.HasPrefix(s, SchemeLayout)
}

// ParseLocation parses oci://REGISTRY/REPO[:TAG][@DIGEST], the same without
// oci://, or oci-layout://PATH[:TAG][@DIGEST]. A registry reference needs a
// tag or a digest.
func ParseLocation(s string) (Location, error) { return parseLocation(s, false) }

// parseLocation parses s; bare allows a registry repository with no tag
// or digest (a Copy destination).
func parseLocation(s string, bare bool) (Location, error) {
	loc := Location{Raw: s}
	bad := func(why string) (Location, error) {
		return Location{}, &Error{Op: "parse", Ref: s, Err: fmt.Errorf("%w: %s", ErrReference, why)}
	}
	if rest, ok := strings.CutPrefix(s, SchemeLayout); ok {
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			d, err := digest.Parse(rest[i+1:])
			if err != nil {
				return bad(fmt.Sprintf("digest %q: %v", rest[i+1:], err))
			}
			loc.Digest, rest = d, rest[:i]
		}
		// A tag follows the last ':' after the last '/' of the path.
		if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
			loc.Tag, rest = rest[i+1:], rest[:i]
			if loc.Tag == "" {
				return bad("empty tag after ':'")
			}
		}
		if rest == "" {
			return bad("no layout path; write oci-layout://PATH[:TAG]")
		}
		loc.Layout = rest
		return loc, nil
	}
	rest := strings.TrimPrefix(s, SchemeOCI)
	r, err := registry.ParseReference(rest)
	if err != nil && bare && !strings.ContainsAny(rest, ":@") {
		r, err = registry.ParseReference(rest + ":_")
		r.Reference = ""
	}
	if err != nil {
		return bad(fmt.Sprintf("%v; write oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST", err))
	}
	loc.Registry, loc.Repository = r.Registry, r.Repository
	// registry.ParseReference keeps only the digest of REPO:TAG@DIGEST.
	if d, err := r.Digest(); err == nil {
		loc.Digest = d
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.LastIndex(rest[:at], ":"); c > strings.LastIndex(rest[:at], "/") {
				loc.Tag = rest[c+1 : at]
			}
		}
	} else {
		loc.Tag = r.Reference
	}
	if loc.Tag == "" && loc.Digest == "" && !bare {
		return bad("no tag or digest; add :TAG or @sha256:DIGEST")
	}
	return loc, nil
}

// reference is the tag or digest to resolve: the digest when there is one.
func (l Location) reference() string {
	if l.Digest != "" {
		return l.Digest.String()
	}
	return l.Tag
}

// name is the repository (REGISTRY/REPO) or the layout path.
func (l Location) name() string {
	if l.Layout != "" {
		return SchemeLayout + l.Layout
	}
	return l.Registry + "/" + l.Repository
}

// key is what the cache tags with the digest a reference resolved to.
func (l Location) key() string {
	if l.Tag != "" {
		return l.name() + ":" + l.Tag
	}
	return l.name() + "@" + l.Digest.String()
}

// artifact is the full reference of digest d for signature verification
// (registry/repository@digest; layouts are named local/layout).
func (l Location) artifact(d digest.Digest) string {
	if l.Layout != "" {
		return "local/layout@" + d.String()
	}
	return l.Registry + "/" + l.Repository + "@" + d.String()
}

// isLocalhost reports whether a registry host is on this machine, where
// plain HTTP is used by default.
func isLocalhost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
