package state

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// A File keeps the last token it issued in two records: LeaseFile, and
// mutexFile (the file it flocks, otherwise empty), which Acquire writes
// first. So a deleted LeaseFile loses no token, even one that never
// wrote the status (a lease acquired, nothing committed yet): the status
// remembers only the tokens it was written under. mutexFile keeps that
// lease's TTL too, so that a deleted LeaseFile does not lose how long
// its holder may go between refreshes: an Acquire that finds LeaseFile
// missing takes the lease as held for that TTL, not its own.
//
// mutexFile holds the token as 20 decimal digits, a space, the TTL in
// nanoseconds as 20 digits and a newline, overwritten in place (it is
// never replaced: its flock is on the file, not the name). A write is one
// short, fixed-width write at offset 0, before the lease it records is
// handed out: a crash that tore it would leave the new value's first
// digits and the old one's last: a token that is not below the old one
// (tokens may be skipped, never issued twice). Stores written before the
// TTL was kept hold the token alone (20 digits and a newline): their
// TTL is unknown until the next Acquire.

// issuedWidth is the length of mutexFile's record; oldIssuedWidth that
// of a record without the TTL.
const (
	issuedWidth    = 42
	oldIssuedWidth = 21
)

// issued returns the last token written to mutexFile, 0 when it holds
// none (a store written before it was kept there, or a recreated file),
// and the TTL of its lease, 0 when unknown. The caller holds the flock.
func (f *File) issued() (uint64, time.Duration, error) {
	b := make([]byte, issuedWidth+1)
	n, err := f.mutex.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, errorf("read %s: %w", f.v.where(mutexFile), err)
	}
	if n == 0 {
		return 0, 0, nil
	}
	s := string(b[:n])
	fields := strings.Fields(s)
	var t, ttl uint64
	var perr error
	if len(fields) > 0 {
		t, perr = strconv.ParseUint(fields[0], 10, 64)
	}
	if len(fields) > 1 && perr == nil {
		ttl, perr = strconv.ParseUint(fields[1], 10, 63)
	}
	if n != issuedWidth && n != oldIssuedWidth || len(fields) != 1+(n-oldIssuedWidth)/oldIssuedWidth || !strings.HasSuffix(s, "\n") || perr != nil {
		return 0, 0, &CorruptError{Path: f.v.where(mutexFile), Err: fmt.Errorf("%q is not the last token issued and its TTL (20 digits, a space, 20 digits and a newline)", s)}
	}
	return t, time.Duration(ttl), nil
}

// setIssued writes token and the TTL of its lease to mutexFile, durably.
// The caller holds the flock.
func (f *File) setIssued(token uint64, ttl time.Duration) error {
	b := fmt.Appendf(nil, "%020d %020d\n", token, ttl.Nanoseconds())
	if _, err := f.mutex.WriteAt(b, 0); err != nil {
		return errorf("write %s: %w", f.v.where(mutexFile), f.full(err))
	}
	if err := f.mutex.Truncate(issuedWidth); err != nil {
		return errorf("write %s: %w", f.v.where(mutexFile), f.full(err))
	}
	if err := f.mutex.Sync(); err != nil {
		return errorf("write %s: %w", f.v.where(mutexFile), f.full(err))
	}
	return nil
}

// tokens returns the greatest token the status was written under and
// the greatest token known to be issued: that one and mutexFile's.
// The caller holds the flock.
func (f *File) tokens() (written, last uint64, err error) {
	if written, err = f.j.lastToken(); err != nil {
		return 0, 0, err
	}
	issued, _, err := f.issued()
	if err != nil {
		return 0, 0, err
	}
	return written, max(written, issued), nil
}

// heldTTL is how long the lease of token last, whose record LeaseFile
// was lost, is taken as held by its unknown holder: the TTL that lease
// was acquired with, as mutexFile keeps it, or ttl (the acquirer's) when
// that is unknown (mutexFile lost, or written before it kept TTLs).
// The caller holds the flock.
func (f *File) heldTTL(last uint64, ttl time.Duration) (time.Duration, error) {
	issued, held, err := f.issued()
	if err != nil {
		return 0, err
	}
	if issued == last && held > 0 {
		return held, nil
	}
	return ttl, nil
}
