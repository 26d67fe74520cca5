package etcdstore

import (
	"context"
	"time"

	"github.com/hopdag/hopdag/state"
)

var _ state.LeaseReader = (*Store)(nil)

// ReadLease returns the lock's lease; see state.LeaseReader. It holds
// the lock by the rule Acquire applies: while the lock key exists (etcd
// deletes it when its server expires the key's lease), or, when the key
// was deleted by hand, while the etcd lease the issued key names lives;
// with both the lock and the issued keys deleted after the status was
// written, the lease of the status's last token is held by an unknown
// holder (Holder says so), with a zero Expires and TTL, until an Acquire
// or the holder's Refresh gives it an etcd lease. An expired or released
// lease is not known (a zero Lease). TTL is the etcd lease as granted, in
// whole seconds; Expires is counted from before the request with the
// time the server says the lease has left (whole seconds too). It writes
// nothing.
func (s *Store) ReadLease(ctx context.Context) (state.Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return state.Lease{}, false, err
	}
	ls, err := s.readLock(ctx)
	if err == nil && ls.lock == nil && ls.issued == nil {
		// No record: held by the status's last writer, if any (see
		// Acquire).
		written, err := s.lastWritten(ctx)
		if err != nil || written == 0 {
			return state.Lease{}, false, err
		}
		return state.Lease{Holder: unknownHolder, Token: written}, true, nil
	}
	if err != nil || !ls.held() {
		return state.Lease{}, false, err
	}
	ttl, err := s.cli.TimeToLive(ctx, ls.lease)
	if err != nil {
		return state.Lease{}, false, errorf("read the lease of %s: %w", s.lockKey, err)
	}
	return state.Lease{Holder: ls.holder, Token: ls.token, TTL: time.Duration(ttl.GrantedTTL) * time.Second, Expires: ls.start.Add(ls.ttl)}, true, nil
}
