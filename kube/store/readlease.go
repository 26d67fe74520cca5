package store

import (
	"context"
	"time"

	"github.com/hopdag/hopdag/state"
)

var _ state.LeaseReader = (*Store)(nil)

// ReadLease returns the Lease object's lease; see state.LeaseReader. It
// holds the lock by the rule Acquire applies: it has a holder and its
// renewTime plus its duration plus the clock-skew allowance (state.Skew)
// has not passed on this clock. A released Lease (no holder) and no Lease
// object in a store that never issued a token are a zero Lease; a Lease
// object missing once one was issued is held, by an unknown holder, with
// the last token (the head's fence), as Acquire takes it. It writes
// nothing.
func (s *Store) ReadLease(ctx context.Context) (state.Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return state.Lease{}, false, err
	}
	l, err := s.lease(ctx)
	if err == nil && l == nil {
		// Missing: held by the last lease issued, if one was (see
		// Acquire).
		head, err := s.head(ctx)
		if err != nil || head == nil || num(head, annFence) == 0 {
			return state.Lease{}, false, err
		}
		return state.Lease{Holder: unknownHolder, Token: num(head, annFence)}, true, nil
	}
	if err != nil || holderOf(l) == "" {
		return state.Lease{}, false, err
	}
	lease := state.Lease{Holder: holderOf(l), Token: num(&l.ObjectMeta, annToken)}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return lease, false, nil // Acquire takes it over: s.taken
	}
	lease.TTL = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	lease.Expires = expiry(l)
	return lease, s.taken(l), nil
}
