package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hopdag/hopdag/state"
)

// checkToken refuses token unless it is the view's fence, the Lease
// holds it unexpired, and no greater token wrote the status.
func (s *Store) checkToken(ctx context.Context, token uint64) error {
	l, err := s.lease(ctx)
	if err != nil {
		return err
	}
	if l == nil && token != 0 && s.v.head != nil && num(s.v.head, annFence) == token {
		// The Lease was deleted (by hand) and token is the last issued:
		// the lease is taken as held, and its holder goes on (its next
		// Refresh puts the Lease back).
	} else if l == nil || !s.held(l) || num(&l.ObjectMeta, annToken) != token || token == 0 {
		return s.fenced(ctx, token)
	}
	if s.v.head == nil {
		return &state.CorruptError{Path: s.path("ConfigMap", s.name),
			Err: fmt.Errorf("the head is not there, though lease %d holds the store: the run's status went with it (release the lock and acquire it again to start a new record)", token)}
	}
	if num(s.v.head, annFence) != token {
		return s.fenced(ctx, token)
	}
	if s.headUID != "" && s.v.head.UID != s.headUID {
		// The Lease may hold the same token for its new holder: say who.
		return fmt.Errorf("%w (the store was started over since this handle acquired lease %d: its head %s was deleted and made again, and its tokens start from 1)",
			s.fenced(ctx, token), token, s.path("ConfigMap", s.name))
	}
	if token < s.v.token {
		return &state.FencedError{Token: token, Written: s.v.token}
	}
	return nil
}

// fenced builds the FencedError of token from the current Lease.
func (s *Store) fenced(ctx context.Context, token uint64) error {
	l, err := s.lease(ctx)
	if err != nil {
		return err
	}
	fe := &state.FencedError{Token: token}
	if l != nil && s.held(l) {
		fe.Holder, fe.Current = holderOf(l), num(&l.ObjectMeta, annToken)
	}
	if l == nil {
		// Missing: held by the last lease issued, if any (not free).
		head, err := s.head(ctx)
		if err != nil {
			return err
		}
		if head != nil && num(head, annFence) != 0 {
			fe.Holder, fe.Current = unknownHolder, num(head, annFence)
		}
	}
	return fe
}

// head reads the head ConfigMap, nil when there is none.
func (s *Store) head(ctx context.Context) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, s.key(), &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, errorf("reading %s: %w", s.path("ConfigMap", s.name), err)
	}
	if err := s.checkHead(&cm); err != nil {
		return nil, err
	}
	return &cm, nil
}

// checkHead refuses a head whose annotations do not parse.
func (s *Store) checkHead(cm *corev1.ConfigMap) error {
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	where := s.path("ConfigMap", s.name)
	if _, ok := cm.Annotations[annLegacy]; ok {
		return &state.CorruptError{Path: where + " annotation " + annLegacy,
			Err: errors.New("the status was written by an earlier hopdag (whole-status chunks), which this one does not read: finish or abandon that run with the hopdag that started it")}
	}
	for _, ann := range []string{annFence, annLeaseSeconds, annGeneration, annChunks} {
		if err := checkNum(cm, ann, where); err != nil {
			return err
		}
	}
	if num(cm, annGeneration) != 0 {
		if err := checkHex(cm, annID, 8, where); err != nil {
			return err
		}
		if err := checkRef(cm.Annotations[annJournal], where+" annotation "+annJournal); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) lease(ctx context.Context) (*coordinationv1.Lease, error) {
	var l coordinationv1.Lease
	if err := s.c.Get(ctx, s.key(), &l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, errorf("reading %s: %w", s.path("Lease", s.name), err)
	}
	if err := checkNum(&l, annToken, s.path("Lease", s.name)); err != nil {
		return nil, err
	}
	return &l, nil
}

// held reports whether l has a holder and has not expired.
func (s *Store) held(l *coordinationv1.Lease) bool {
	if holderOf(l) == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return s.now().Before(expiry(l))
}

// taken reports whether l cannot be acquired: it has a holder and its
// expiry plus the clock-skew allowance (state.Skew of its duration) has not
// passed. Between the expiry and then nobody writes: the holder is
// fenced, the next one not yet in. The allowance covers the difference
// between the holder's clock, which wrote renewTime, and this one.
func (s *Store) taken(l *coordinationv1.Lease) bool {
	if holderOf(l) == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	ttl := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	return s.now().Before(expiry(l).Add(state.Skew(ttl)))
}

func expiry(l *coordinationv1.Lease) time.Time {
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
