package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Acquire takes the lock; see Lock. A lease is taken over only once it
// has expired, whatever became of its holder.
func (f *File) Acquire(ctx context.Context, holder string, ttl time.Duration) (Lease, error) {
	if err := checkAcquire(holder, ttl); err != nil {
		return Lease{}, err
	}
	var lease Lease
	err := f.bothLocked(ctx, func(now time.Time) error {
		r, err := readRecord(f.v)
		if err != nil {
			return err
		}
		_, last, err := f.tokens()
		if err != nil {
			return err
		}
		if r.missing && last > 0 {
			// The lease record is gone (deleted by hand, say), and a lease
			// was issued: its holder may still run. Take the lease as
			// held, by an unknown holder, for one of its TTLs from now
			// (not the acquirer's, which may be shorter than the time
			// the holder goes between refreshes); the holder's next
			// Refresh keeps it (record.refresh).
			held, err := f.heldTTL(last, ttl)
			if err != nil {
				return err
			}
			*r = leaseRecord{Last: last, Token: last, Holder: unknownHolder, TTL: held, Expires: now.Add(held)}
			if err := writeRecord(f.v, r); err != nil {
				return errorf("acquire: %w", err)
			}
			return &LockedError{Holder: unknownHolder, Token: last, Expires: r.Expires, Missing: f.v.where(LeaseFile)}
		}
		if lease, err = r.acquire(now, holder, ttl, last); err != nil {
			return err
		}
		// mutexFile first: a crash before LeaseFile is written skips a
		// token, never issues one twice.
		if err := f.setIssued(r.Last, ttl); err != nil {
			return errorf("acquire: %w", err)
		}
		if err := writeRecord(f.v, r); err != nil {
			return errorf("acquire: %w", err)
		}
		return nil
	})
	return lease, err
}

// Refresh extends the lease; see Lock. It takes the lease's own flock
// only (see leaseMutexFile), so a checkpoint in flight, in this handle or
// another, never delays it. When LeaseFile is missing and the lease is
// the one the status was last written under, it writes the record again:
// the lease's holder and TTL, expiring a TTL from now (this, which reads
// the status's tokens, waits for the status's flock too).
func (f *File) Refresh(ctx context.Context, l Lease) (Lease, error) {
	var lease Lease
	missing := false
	err := f.leaseLocked(ctx, func(now time.Time) error {
		r, err := readRecord(f.v)
		if err != nil || r.missing {
			missing = err == nil
			return err
		}
		if lease, err = r.refresh(now, l); err != nil {
			return err
		}
		if err := writeRecord(f.v, r); err != nil {
			return errorf("refresh: %w", err)
		}
		return nil
	})
	if err != nil || !missing {
		return lease, err
	}
	err = f.bothLocked(ctx, func(now time.Time) error {
		r, err := f.current(now, l.Token)
		if err != nil {
			return err
		}
		if r.missing {
			if l.TTL <= 0 {
				return fmt.Errorf("%w: refresh of lease %d with ttl %v; pass the Lease that Acquire or Refresh returned", errInvalid, l.Token, l.TTL)
			}
			holder := l.Holder
			if holder == "" {
				holder = unknownHolder
			}
			*r = leaseRecord{Last: r.Last, Token: l.Token, Holder: holder, TTL: l.TTL, Expires: now.Add(l.TTL)}
			lease = r.lease()
		} else if lease, err = r.refresh(now, l); err != nil {
			return err
		}
		if err := writeRecord(f.v, r); err != nil {
			return errorf("refresh: %w", err)
		}
		return nil
	})
	return lease, err
}

// Release frees the lock; see Lock. When LeaseFile is missing and the
// lease is the one the status was last written under, it writes the
// record of a free lock, with that last token.
func (f *File) Release(ctx context.Context, l Lease) error {
	return f.bothLocked(ctx, func(now time.Time) error {
		r, err := f.current(now, l.Token)
		if err != nil {
			return err
		}
		if r.missing {
			*r = leaseRecord{Last: r.Last}
		} else if err := r.release(now, l); err != nil {
			return err
		}
		if err := writeRecord(f.v, r); err != nil {
			return errorf("release: %w", err)
		}
		return nil
	})
}

// current reads LeaseFile for a call under token (a Commit, a Refresh, a
// Release) and returns a *FencedError unless token is the current
// lease's. When LeaseFile is missing (deleted by hand, say), the lease
// taken as held is the one the status was last written under, as Acquire
// takes it (see File): its holder may still run, and goes on. The record
// returned then has missing set and Last that token; nothing is written.
func (f *File) current(now time.Time, token uint64) (*leaseRecord, error) {
	r, err := readRecord(f.v)
	if err != nil {
		return nil, err
	}
	if !r.missing {
		return r, r.check(now, token)
	}
	written, last, err := f.tokens()
	if err != nil {
		return nil, err
	}
	if err := missingCheck(token, written, last); err != nil {
		return nil, err
	}
	r.Last = last
	return r, nil
}

// missingCheck decides a call under token when LeaseFile is missing,
// the status was last written under the token written, and last is the
// last token issued: only that lease can be current. A token below
// written is refused as the status refuses it (FencedError.Written); any
// other, as not the lease taken as held, by a holder unknown. When no
// token was ever issued (last 0), the lock is free.
func missingCheck(token, written, last uint64) error {
	switch {
	case last == 0:
		return &FencedError{Token: token}
	case token == last:
		return nil
	case token < written:
		return &FencedError{Token: token, Written: written}
	}
	return &FencedError{Token: token, Holder: unknownHolder, Current: last}
}

// readRecord reads LeaseFile; a zero record, missing, when it does not
// exist.
func readRecord(v volume) (*leaseRecord, error) {
	b, err := v.read(LeaseFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &leaseRecord{missing: true}, nil
	}
	if err != nil {
		return nil, errorf("read lease: %w", err)
	}
	r := new(leaseRecord)
	if err := json.Unmarshal(b, r); err != nil {
		off := int64(0)
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			// Offset counts the bytes read, the bad one included; at the
			// end of the input, there is no bad byte: the record ends.
			off = se.Offset
			if off > 0 && off <= int64(len(b)) && !isEnd(se) {
				off--
			}
		}
		return nil, &CorruptError{Path: v.where(LeaseFile), Offset: off, Err: err, Fix: leaseFix(v)}
	}
	if err := r.validate(); err != nil {
		return nil, &CorruptError{Path: v.where(LeaseFile), Err: err, Fix: leaseFix(v)}
	}
	return r, nil
}

// leaseFix is what to do about a File's corrupt lease record: delete it.
// That is safe: the lock file keeps the last token issued and its TTL,
// the status the tokens it was written under, and the next Acquire takes
// the last lease as held for its TTL (see File). Memory's records are
// not a user's to delete: "" (the default advice).
func leaseFix(v volume) string {
	if _, ok := v.(fileVolume); !ok {
		return ""
	}
	return "delete it: rm " + shellQuote(v.where(LeaseFile)) +
		" (safe: the lock file and the status keep the tokens, and the next run waits out the last lease before it takes the lock)"
}

// shellQuote quotes a path for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isEnd reports whether a JSON syntax error is the input's end.
func isEnd(se *json.SyntaxError) bool {
	return se.Error() == "unexpected end of JSON input"
}

func (r *leaseRecord) validate() error {
	switch {
	case r.Last == 0 && r.Token == 0 && r.Holder == "":
		return errors.New("no token: the lease record is empty")
	case r.Token > r.Last:
		return fmt.Errorf("token %d is above the last token %d", r.Token, r.Last)
	case r.Token != 0 && (r.Holder == "" || r.TTL <= 0 || r.Expires.IsZero()):
		return fmt.Errorf("lease %d lacks a holder, a ttl or an expiry", r.Token)
	}
	return nil
}

func writeRecord(v volume, r *leaseRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return v.replace(LeaseFile, append(b, '\n'))
}
