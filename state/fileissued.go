package state

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A File keeps the last token it issued in two records: LeaseFile, and
// mutexFile (the file it flocks, otherwise empty), which Acquire writes
// first. So a deleted LeaseFile loses no token, even one that never
// wrote the status (a lease acquired, nothing committed yet): the status
// remembers only the tokens it was written under.
//
// mutexFile holds the token as 20 decimal digits and a newline,
// overwritten in place (it is never replaced: its flock is on the file,
// not the name). A write is one short, fixed-width write at offset 0: a
// crash that tore it would leave the new value's first digits and the
// old one's last: a number that is not below the old one (tokens may be
// skipped, never issued twice).

// issuedWidth is the length of mutexFile's record.
const issuedWidth = 21

// issued returns the last token written to mutexFile, 0 when it holds
// none (a store written before it was kept there, or a recreated file).
// The caller holds the flock.
func (f *File) issued() (uint64, error) {
	b := make([]byte, issuedWidth+1)
	n, err := f.mutex.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, errorf("read %s: %w", f.v.where(mutexFile), err)
	}
	if n == 0 {
		return 0, nil
	}
	s := string(b[:n])
	t, perr := strconv.ParseUint(strings.TrimSuffix(s, "\n"), 10, 64)
	if n != issuedWidth || !strings.HasSuffix(s, "\n") || perr != nil {
		return 0, &CorruptError{Path: f.v.where(mutexFile), Err: fmt.Errorf("%q is not the last token issued (20 digits and a newline)", s)}
	}
	return t, nil
}

// setIssued writes token to mutexFile, durably. The caller holds the
// flock.
func (f *File) setIssued(token uint64) error {
	b := fmt.Appendf(nil, "%020d\n", token)
	if _, err := f.mutex.WriteAt(b, 0); err != nil {
		return errorf("write %s: %w", f.v.where(mutexFile), err)
	}
	if err := f.mutex.Truncate(issuedWidth); err != nil {
		return errorf("write %s: %w", f.v.where(mutexFile), err)
	}
	if err := f.mutex.Sync(); err != nil {
		return errorf("write %s: %w", f.v.where(mutexFile), err)
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
	issued, err := f.issued()
	if err != nil {
		return 0, 0, err
	}
	return written, max(written, issued), nil
}
