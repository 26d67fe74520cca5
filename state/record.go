package state

import (
	"time"
)

// record is the lock's state as Memory keeps it and File persists it
// (lease.json). Its methods are the lock's rules, shared by both; callers
// serialise access to it.
type leaseRecord struct {
	// Last is the last token handed out; the next acquisition gets Last+1.
	Last uint64 `json:"last"`
	// Token is the current lease's token, 0 when the lock was released.
	Token  uint64 `json:"token,omitempty"`
	Holder string `json:"holder,omitempty"`
	// TTL is in nanoseconds.
	TTL     time.Duration `json:"ttl,omitempty"`
	Expires time.Time     `json:"expires,omitzero"`

	// missing is set by File when lease.json did not exist.
	missing bool
}

// unknownHolder is the holder of a lease File takes as held because its
// record was missing; the holder's Refresh names it again.
const unknownHolder = "(unknown: the lease record was missing)"

// held reports whether a lease holds the lock at now: its holder may
// write until it expires.
func (r *leaseRecord) held(now time.Time) bool {
	return r.Token != 0 && now.Before(r.Expires)
}

// taken reports whether the lock cannot be acquired at now: until the
// lease expired and the clock-skew allowance (Skew) passed after that.
func (r *leaseRecord) taken(now time.Time) bool {
	return r.Token != 0 && now.Before(r.Expires.Add(Skew(r.TTL)))
}

// Skew is the clock-skew allowance of a lease of the given TTL, a tenth
// of it: a Memory or File lock is acquired by another holder only once
// the current lease expired that long ago. Between its expiry and then,
// nobody can write (the old holder is fenced, the new one not yet in).
// It covers the difference between the clocks compared: the Expires a
// File holder wrote with its wall clock and the wall clock of the process
// that acquires (another process on the same machine, after an NTP step,
// say). A Keeper stops its run Margin before the expiry on its own clock,
// so a holder has stopped TTL/5 before another can start.
func Skew(ttl time.Duration) time.Duration { return ttl / 10 }

// acquire takes the lock for holder once the current lease, if any, has
// expired. written is the greatest token the status was written under:
// the new token is above it too, so that a lost or restored lease record
// never issues a token twice.
func (r *leaseRecord) acquire(now time.Time, holder string, ttl time.Duration, written uint64) (Lease, error) {
	if r.taken(now) {
		return Lease{}, &LockedError{Holder: r.Holder, Token: r.Token, Expires: r.Expires}
	}
	r.Last = max(r.Last, r.Token, written)
	r.Last++
	r.Token, r.Holder, r.TTL, r.Expires = r.Last, holder, ttl, now.Add(ttl)
	return r.lease(), nil
}

func (r *leaseRecord) lease() Lease {
	return Lease{Holder: r.Holder, Token: r.Token, TTL: r.TTL, Expires: r.Expires}
}

// check returns a *FencedError unless token is the current lease's.
func (r *leaseRecord) check(now time.Time, token uint64) error {
	if r.held(now) && r.Token == token {
		return nil
	}
	e := &FencedError{Token: token}
	if r.held(now) {
		e.Holder, e.Current = r.Holder, r.Token
	}
	return e
}

func (r *leaseRecord) refresh(now time.Time, l Lease) (Lease, error) {
	if err := r.check(now, l.Token); err != nil {
		return Lease{}, err
	}
	if r.Holder == unknownHolder && l.Holder != "" && l.TTL > 0 {
		// The record was rebuilt, by an Acquire, with the acquirer's TTL:
		// the holder's lease is its own again.
		r.Holder, r.TTL = l.Holder, l.TTL
	}
	r.Expires = now.Add(r.TTL)
	return r.lease(), nil
}

func (r *leaseRecord) release(now time.Time, l Lease) error {
	if err := r.check(now, l.Token); err != nil {
		return err
	}
	r.Token, r.Holder, r.TTL, r.Expires = 0, "", 0, time.Time{}
	return nil
}
