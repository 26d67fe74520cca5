package state

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Sentinel errors of the package, matched with errors.Is. Each is matched
// by a typed error that says more (errors.As).
var (
	// ErrLocked is matched by the *LockedError of an Acquire that found
	// the lock held by an unexpired lease.
	ErrLocked = errors.New("state: locked")
	// ErrFenced is matched by the *FencedError of a Save, Refresh or
	// Release that presented a token that is no longer the current lease's:
	// another holder acquired the lock since, or the lease expired or was
	// released. The call changed nothing.
	ErrFenced = errors.New("state: fenced")
	// ErrLost is matched by the *LostError a Keeper gives as the cause of
	// its context's cancellation: the lease expired before a refresh
	// succeeded, or a refresh was fenced.
	ErrLost = errors.New("state: lease lost")
	// ErrCorrupt is matched by the *CorruptError of a stored record (a
	// file, a key) that does not parse or does not check out: garbage, a
	// bad checksum, a gap in the journal. The record is left as it is,
	// and no write goes over it. (A torn last journal line, a write a
	// crash cut short and never acknowledged, is not corruption: it is
	// dropped.)
	ErrCorrupt = errors.New("state: corrupt record")
	// ErrNoStatus is matched by the error of an Approve whose store holds
	// no status: no run was saved there yet.
	ErrNoStatus = errors.New("state: no status")
)

// LockedError is an Acquire that found the lock held.
type LockedError struct {
	// Holder is the name the current holder acquired the lock with.
	Holder string
	// Token is the current lease's fencing token.
	Token uint64
	// Expires is when the current lease expires unless refreshed, as the
	// backend sees it (zero when unknown). Memory and File let another
	// holder acquire Skew(TTL) after it; etcd when its server expired
	// the lease.
	Expires time.Time
	// Missing, when set, names the lease record that was found missing
	// (File: lease.json) after lease Token, the last one, was issued: the
	// lease is taken as held by an unknown holder until Expires, so that
	// a holder still running keeps it by refreshing.
	Missing string
}

// Error is like "state: locked by node-a (lease 7) until
// 2026-09-01T10:00:00Z; wait for the lease to expire or for node-a to
// release it".
func (e *LockedError) Error() string {
	if e.Missing != "" {
		return fmt.Sprintf("state: %s was missing, and lease %d was the last one issued: the lease is taken as held until %s, so that a holder still running keeps it (its next refresh does); if none runs, acquire again after that",
			e.Missing, e.Token, e.Expires.UTC().Format(time.RFC3339Nano))
	}
	until := ""
	if !e.Expires.IsZero() {
		until = " until " + e.Expires.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("state: locked by %s (lease %d)%s; wait for the lease to expire or for %s to release it",
		quoteHolder(e.Holder), e.Token, until, quoteHolder(e.Holder))
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// FencedError is a call that presented a stale fencing token.
type FencedError struct {
	// Token is the token the caller presented.
	Token uint64
	// Holder is the current holder of the lock, "" when the lock is free.
	Holder string
	// Current is the current lease's token, 0 when the lock is free.
	Current uint64
	// Written, when not 0, is what refused the call: the status was
	// already written under this greater token (the lock's record was
	// lost or restored from an old backup, and the status remembers).
	Written uint64
}

// Error is like "state: fenced: lease 7 is not current; the lock is held by
// node-b (lease 8)".
func (e *FencedError) Error() string {
	if e.Written != 0 {
		return fmt.Sprintf("state: fenced: lease %d is older than lease %d, which already wrote the status; acquire the lock again", e.Token, e.Written)
	}
	if e.Holder == "" && e.Current == 0 {
		return "state: fenced: lease " + strconv.FormatUint(e.Token, 10) +
			" is not current; the lock is free (the lease expired or was released): acquire it again"
	}
	return fmt.Sprintf("state: fenced: lease %d is not current; the lock is held by %s (lease %d)",
		e.Token, quoteHolder(e.Holder), e.Current)
}

// Unwrap returns ErrFenced.
func (e *FencedError) Unwrap() error { return ErrFenced }

// LostError is the cause a Keeper gives when it cancels its context.
type LostError struct {
	// Lease is the lease that was lost, as last refreshed.
	Lease Lease
	// Err is why: a *FencedError from a refresh, or nil when the lease
	// expired before any refresh succeeded.
	Err error
}

// Error is like "state: lease 7 of node-a lost: it expired at ... before a
// refresh succeeded".
func (e *LostError) Error() string {
	head := fmt.Sprintf("state: lease %d of %s lost", e.Lease.Token, quoteHolder(e.Lease.Holder))
	if e.Err != nil {
		return head + ": " + e.Err.Error()
	}
	return head + ": no refresh succeeded before its expiry at " + e.Lease.Expires.UTC().Format(time.RFC3339Nano) + " (less the keeper's margin)"
}

// StopBy is when whatever the lost lease guarded must have stopped: the
// lease's expiry, after which another holder may soon take the lock. The
// Keeper cancels its context with the LostError as the cause, Margin
// before that; a runner that stops work gracefully (components.Exec's
// SIGTERM, grace period, SIGKILL) cuts its grace short at StopBy, found
// through context.Cause by this method.
func (e *LostError) StopBy() time.Time { return e.Lease.Expires }

// Unwrap returns ErrLost and Err, so errors.Is matches both ErrLost and,
// for a fenced refresh, ErrFenced.
func (e *LostError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLost}
	}
	return []error{ErrLost, e.Err}
}

// CorruptError is a stored record that does not parse or check out.
type CorruptError struct {
	// Path names the record: a file's path, or a key.
	Path string
	// Offset is where in the record the bad part starts, in bytes.
	Offset int64
	// Err says what is wrong with it.
	Err error
	// Fix, when set, is what to do about it, when that is known and safe
	// (a File's lease record: delete it); otherwise the record is to be
	// restored from a backup or repaired by hand.
	Fix string
}

// Error is like "state: /var/lib/x/journal.log at byte 4096 is corrupt:
// checksum 1a2b3c4d does not match the record's 00000000; it was left as
// it is and nothing was written: restore it from a backup or repair it by
// hand". It advises deleting the record only where Fix says so (a File's
// lease.json, whose tokens the lock file and the status keep): the
// status's records hold the fencing tokens, and losing them would let a
// stale holder's token be current again.
func (e *CorruptError) Error() string {
	fix := e.Fix
	if fix == "" {
		fix = "restore it from a backup or repair it by hand"
	}
	return fmt.Sprintf("state: %s at byte %d is corrupt: %v; it was left as it is and nothing was written: %s",
		e.Path, e.Offset, e.Err, fix)
}

// Unwrap returns ErrCorrupt and Err.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// errInvalid is matched by errors of calls that can never succeed as
// made (a nil status): they are not retried.
var errInvalid = errors.New("state: invalid call")

var errNilStatus = fmt.Errorf("%w: save of a nil status", errInvalid)

func quoteHolder(h string) string {
	if h == "" {
		return `""`
	}
	return h
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("state: "+format, args...)
}
