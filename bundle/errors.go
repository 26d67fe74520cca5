package bundle

import (
	"errors"
)

// Sentinels that the errors of this package match with errors.Is.
var (
	// ErrUnreachable: the registry could not be reached (connection
	// refused, DNS, timeout, a gateway's 502/503/504) and no cached
	// bundle could stand in for it.
	ErrUnreachable = errors.New("registry unreachable")
	// ErrDigest: content did not match its digest (a tampered or corrupt
	// manifest or layer), or a reference pinned by digest resolved to
	// another one.
	ErrDigest = errors.New("content does not match its digest")
	// ErrSignature: the bundle has no signature that the configured key
	// verifies. ErrUnsigned is the case of no signature at all.
	ErrSignature = errors.New("signature verification failed")
	// ErrUnsigned: the bundle has no signature and verification is required.
	// It matches ErrSignature too.
	ErrUnsigned = errors.New("no signature")
	// ErrNotBundle: the manifest is not a hopdag catalog bundle (another
	// artifact type, media type or number of layers), or its layer is not a
	// well-formed catalog archive.
	ErrNotBundle = errors.New("not a hopdag catalog bundle")
	// ErrNotCached: the cache holds no bundle for the reference.
	ErrNotCached = errors.New("not in the cache")
	// ErrReference: the reference cannot be parsed.
	ErrReference = errors.New("invalid reference")
)

// Error is what every function of this package returns on failure: the
// operation, the reference as the caller gave it, and why.
type Error struct {
	Op  string // "push", "pull", "verify", "export", "copy"
	Ref string
	// Digest is the manifest digest, once known.
	Digest string
	Err    error
}

func (e *Error) Error() string {
	s := "bundle: " + e.Op + " " + e.Ref
	if e.Digest != "" {
		s += " (" + e.Digest + ")"
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// unsignedError matches both ErrUnsigned and ErrSignature.
type unsignedError struct{ msg string }

func (e unsignedError) Error() string { return e.msg }

func (e unsignedError) Is(target error) bool { return target == ErrUnsigned || target == ErrSignature }
