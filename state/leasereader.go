package state

import (
	"context"
	"time"
)

// LeaseReader is a Lock that says who holds it without taking it: an
// optional ability, found by type assertion, that Memory, File, the etcd
// store (state/etcdstore) and the Kubernetes store (kube/store) have. It
// is for readers that must not get in a writer's way, such as a status
// command telling a run whose coordinator died from one in progress.
type LeaseReader interface {
	// ReadLease returns the lock's lease as last acquired or refreshed,
	// and whether it holds the lock: whether Acquire would refuse now
	// (with a *LockedError), by the rule Acquire applies. Memory, File and
	// the Kubernetes store: until Expires plus Skew(TTL), on the reader's
	// clock. etcd: until its server expires the lease.
	//
	// A lease that does not hold the lock is one whose holder stopped
	// refreshing it without releasing it (it died, was killed, or was cut
	// off: it is fenced). A zero Lease, with held false, is a lock the
	// backend knows no lease of: never acquired, released, or, on etcd,
	// expired (etcd deletes an expired lease with its key).
	//
	// File follows the rule LockedError.Missing documents: when its lease
	// record is missing after a lease was issued, the lease of the last
	// token issued is held by an unknown holder (Holder says so), with a
	// zero Expires and TTL, until an Acquire or the holder's Refresh
	// gives it an expiry. ReadLease writes nothing and does not take the
	// lock.
	ReadLease(ctx context.Context) (l Lease, held bool, err error)
}

// Compile-time checks: the backends of this package read their leases.
var (
	_ LeaseReader = (*Memory)(nil)
	_ LeaseReader = (*File)(nil)
)

// read is ReadLease of a record at now, as acquire decides.
func (r *leaseRecord) read(now time.Time) (Lease, bool) {
	if r.Token == 0 {
		return Lease{}, false
	}
	return r.lease(), r.taken(now)
}

// ReadLease returns the lock's lease; see LeaseReader.
func (m *Memory) ReadLease(ctx context.Context) (Lease, bool, error) {
	var (
		lease Lease
		held  bool
	)
	err := m.do(ctx, func(now time.Time) error {
		r, err := readRecord(m.j.v)
		if err != nil {
			return err
		}
		lease, held = r.read(now)
		return nil
	})
	return lease, held, err
}

// ReadLease returns the lock's lease; see LeaseReader. It reads LeaseFile,
// which is replaced atomically, without the directory's flock; only when
// LeaseFile is missing does it take the flock, to read the last token
// issued as Acquire does.
func (f *File) ReadLease(ctx context.Context) (Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, false, err
	}
	r, err := readRecord(f.v)
	if err != nil {
		return Lease{}, false, err
	}
	if !r.missing {
		l, held := r.read(f.clock.Now())
		return l, held, nil
	}
	var (
		lease Lease
		held  bool
	)
	err = f.locked(ctx, func(now time.Time) error {
		r, err := readRecord(f.v) // an Acquire may have written it since
		if err != nil {
			return err
		}
		if r.missing {
			_, last, err := f.tokens()
			if err != nil {
				return err
			}
			if last > 0 {
				lease, held = Lease{Holder: unknownHolder, Token: last}, true
				return nil
			}
		}
		lease, held = r.read(now)
		return nil
	})
	return lease, held, err
}
