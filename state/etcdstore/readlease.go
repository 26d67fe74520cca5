package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hopdag/hopdag/state"
)

var _ state.LeaseReader = (*Store)(nil)

// ReadLease returns the lock's lease; see state.LeaseReader. The lock
// key holds the lock as long as it exists, which Acquire decides too: etcd
// deletes it when its server expires the key's lease, so an expired lease
// is not known (a zero Lease), as a released one. TTL is the key's etcd
// lease as granted, in whole seconds; Expires is counted from before the
// request with the time the server says the lease has left (whole
// seconds too). It writes nothing.
func (s *Store) ReadLease(ctx context.Context) (state.Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return state.Lease{}, false, err
	}
	start := time.Now()
	resp, err := s.cli.Get(ctx, s.lockKey)
	if err != nil {
		return state.Lease{}, false, errorf("read %s: %w", s.lockKey, err)
	}
	if len(resp.Kvs) == 0 {
		return state.Lease{}, false, nil
	}
	kv := resp.Kvs[0]
	l := state.Lease{Holder: string(kv.Value), Token: uint64(kv.CreateRevision)}
	ttl, err := s.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		return state.Lease{}, false, errorf("read the lease of %s: %w", s.lockKey, err)
	}
	if ttl.TTL < 0 {
		// The lease expired between the two reads; the key went with it.
		return state.Lease{}, false, nil
	}
	l.TTL = time.Duration(ttl.GrantedTTL) * time.Second
	l.Expires = start.Add(time.Duration(ttl.TTL) * time.Second)
	return l, true, nil
}
