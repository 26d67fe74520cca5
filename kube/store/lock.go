package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/hopdag/hopdag/state"
)

// Acquire takes the Lease for holder and raises the head's fence to the
// new token. Lease durations are whole seconds: ttl is rounded up.
func (s *Store) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	if holder == "" {
		return state.Lease{}, errorf("acquire: empty holder name; name the holder, e.g. host/pid")
	}
	if ttl <= 0 {
		return state.Lease{}, errorf("acquire: ttl %v is not positive", ttl)
	}
	secs := int32(min(math.Ceil(ttl.Seconds()), math.MaxInt32))
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return state.Lease{}, err
		}
		l, err := s.acquire(ctx, holder, ttl, secs)
		if !errors.Is(err, errChanged) {
			return l, err
		}
		if try == 10 {
			return state.Lease{}, errorf("acquire %s: it keeps changing under this handle (created, deleted or released between its read and its write)", s.path("Lease", s.name))
		}
	}
}

// errChanged is an Acquire whose write conflicted with a change of the
// Lease that left it free (released, deleted): it reads it again.
var errChanged = errors.New("store: the Lease changed since it was read")

// lockedOrChanged is the refusal of an Acquire whose write of the Lease
// conflicted: a *state.LockedError if the Lease is now held, else
// errChanged.
func (s *Store) lockedOrChanged(ctx context.Context) error {
	cur, err := s.lease(ctx)
	if err != nil {
		return err
	}
	if cur != nil && s.taken(cur) {
		return &state.LockedError{Holder: holderOf(cur), Token: num(&cur.ObjectMeta, annToken), Expires: expiry(cur)}
	}
	return errChanged
}

func (s *Store) acquire(ctx context.Context, holder string, ttl time.Duration, secs int32) (state.Lease, error) {
	start := s.now()
	l, err := s.lease(ctx)
	if err != nil {
		return state.Lease{}, err
	}
	head, err := s.head(ctx)
	if err != nil {
		return state.Lease{}, err
	}
	if l != nil && s.taken(l) && !unfinished(l, head, holder) {
		return state.Lease{}, &state.LockedError{Holder: holderOf(l), Token: num(&l.ObjectMeta, annToken), Expires: expiry(l)}
	}
	token := uint64(0)
	if head != nil {
		token = num(head, annFence)
	}
	if l == nil && token > 0 {
		// One TTL of the holder's (as the head recorded it) or of the
		// acquirer's, whichever is longer: a holder that refreshes in
		// time keeps its lease.
		held := max(secs, int32(min(num(head, annLeaseSeconds), math.MaxInt32)))
		return state.Lease{}, s.placeholder(ctx, token, held, start)
	}
	if l != nil {
		token = max(token, num(&l.ObjectMeta, annToken))
	}
	token++
	now := metav1.NewMicroTime(start)
	spec := coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
	if l == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name}}
		l.Annotations = map[string]string{annToken: strconv.FormatUint(token, 10)}
		l.Spec = spec
		err = s.c.Create(ctx, l)
	} else {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[annToken] = strconv.FormatUint(token, 10)
		transitions := l.Spec.LeaseTransitions
		l.Spec = spec
		l.Spec.LeaseTransitions = new(ptrOr(transitions) + 1)
		err = s.c.Update(ctx, l) // conditioned on the resourceVersion read
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		// Another acquirer won the race, or the Lease was released or
		// deleted since it was read.
		return state.Lease{}, s.lockedOrChanged(ctx)
	}
	if err != nil {
		return state.Lease{}, errorf("acquire Lease %s/%s: %w", s.namespace, s.name, err)
	}
	if err := s.raiseFence(ctx, token, secs); err != nil {
		if errors.Is(err, errSuperseded) {
			return state.Lease{}, s.lockedOrChanged(ctx)
		}
		return state.Lease{}, s.unacquire(ctx, l, err)
	}
	return state.Lease{Holder: holder, Token: token, TTL: ttl, Expires: start.Add(time.Duration(secs) * time.Second)}, nil
}

// unfinished reports whether l, which head's fence is below, is holder's
// own Lease from an acquisition that did not finish: its fence raise
// failed, and so did freeing the Lease (unacquire). The holder takes it
// again rather than be locked out by itself until it expires. (Another
// Acquire of that holder name still between its two writes is
// superseded: its fence raise finds a greater token and it is refused.)
func unfinished(l *coordinationv1.Lease, head *corev1.ConfigMap, holder string) bool {
	fence := uint64(0)
	if head != nil {
		fence = num(head, annFence)
	}
	return holderOf(l) == holder && num(&l.ObjectMeta, annToken) > fence
}

// unacquire frees l, the Lease as acquire wrote it, after the head's
// fence could not be raised (err): the acquisition failed, and the Lease
// must not stay held by nobody until it expires. Its token stays, as a
// Release leaves it, so the next one is greater. The write is
// conditioned on l's resourceVersion: a Lease changed since is left as
// it is. When it fails too, the holder's next Acquire takes the Lease
// back (unfinished); other holders wait for its expiry.
func (s *Store) unacquire(ctx context.Context, l *coordinationv1.Lease, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	holder := holderOf(l)
	l.Spec.HolderIdentity = nil
	if uerr := s.c.Update(ctx, l); uerr != nil {
		return fmt.Errorf("%w; freeing %s again failed too (%v): it stays held by %s until it expires or %s acquires it again", err, s.path("Lease", s.name), uerr, holder, holder)
	}
	return err
}

// errSuperseded is a fence raise that found a greater token than its
// own: another acquisition took the Lease since this one wrote it.
var errSuperseded = errors.New("store: another acquisition raised the fence above this one's token")

// unknownHolder is the holder of a Lease an Acquire put back, taking the
// lease as held, when it found none and a token had been issued.
const unknownHolder = "(unknown: the Lease was missing)"

// placeholder creates the Lease, found missing though token (the head's
// fence: the last token issued) was handed out, as held by an unknown
// holder for one TTL (secs) from now, so that a holder still running
// keeps it by refreshing and Acquires that find it do not extend it; and
// returns the *state.LockedError that says so.
func (s *Store) placeholder(ctx context.Context, token uint64, secs int32, start time.Time) error {
	now := metav1.NewMicroTime(start)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name,
		Annotations: map[string]string{annToken: strconv.FormatUint(token, 10)}}}
	l.Spec = coordinationv1.LeaseSpec{HolderIdentity: new(unknownHolder), LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
	err := s.c.Create(ctx, l)
	if apierrors.IsAlreadyExists(err) {
		// Put back since (its holder's Refresh or Release, another
		// Acquire).
		return s.lockedOrChanged(ctx)
	}
	if err != nil {
		return errorf("acquire: putting back %s: %w", s.path("Lease", s.name), err)
	}
	return &state.LockedError{Holder: unknownHolder, Token: token, Expires: expiry(l), Missing: s.path("Lease", s.name)}
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// raiseFence sets the head's fence to token, and its lease seconds to
// secs (the new lease's duration). A fence higher already is another
// acquisition's since this one wrote the Lease: errSuperseded.
func (s *Store) raiseFence(ctx context.Context, token uint64, secs int32) error {
	var uid types.UID
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		head, err := s.head(ctx)
		if err != nil {
			return err
		}
		if head == nil {
			head = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: s.namespace, Name: s.name, Labels: map[string]string{labelStore: s.name},
				Annotations: map[string]string{annFence: strconv.FormatUint(token, 10), annLeaseSeconds: strconv.Itoa(int(secs))},
			}}
			err := s.c.Create(ctx, head)
			uid = head.UID
			return err
		}
		uid = head.UID
		if f := num(head, annFence); f > token {
			return errSuperseded
		} else if f == token {
			return nil // an earlier try of this write landed
		}
		head.Annotations[annFence] = strconv.FormatUint(token, 10)
		head.Annotations[annLeaseSeconds] = strconv.Itoa(int(secs))
		return s.c.Update(ctx, head)
	})
	if apierrors.IsAlreadyExists(err) {
		return s.raiseFence(ctx, token, secs)
	}
	if err != nil {
		return errorf("acquire: raising the fence of %s/%s: %w", s.namespace, s.name, err)
	}
	// The head moved: the next write reads it again rather than
	// conflicting on it.
	s.mu.Lock()
	s.v.fresh = false
	s.headUID = uid
	s.mu.Unlock()
	return nil
}

// current reads the Lease and checks that l is its current lease: the
// Lease holds l's token, unexpired, for l's holder or for the unknown
// holder of a Lease an Acquire put back. When the Lease is missing and
// l's token is the last issued (the head's fence), it returns a Lease of
// l's to create (no resourceVersion): its holder may still run, and goes
// on.
func (s *Store) current(ctx context.Context, l state.Lease) (*coordinationv1.Lease, error) {
	cur, err := s.lease(ctx)
	if err != nil {
		return nil, err
	}
	if cur == nil && l.Token != 0 {
		head, err := s.head(ctx)
		if err != nil {
			return nil, err
		}
		if head != nil && num(head, annFence) == l.Token {
			if l.Holder == "" || l.TTL <= 0 {
				return nil, errorf("refresh of lease %d of %q with ttl %v: pass the Lease that Acquire or Refresh returned", l.Token, l.Holder, l.TTL)
			}
			secs := int32(min(math.Ceil(l.TTL.Seconds()), math.MaxInt32))
			return &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, Annotations: map[string]string{annToken: strconv.FormatUint(l.Token, 10)}},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &l.Holder, LeaseDurationSeconds: &secs},
			}, nil
		}
	}
	if cur == nil || !s.held(cur) || num(&cur.ObjectMeta, annToken) != l.Token || holderOf(cur) != l.Holder && holderOf(cur) != unknownHolder {
		return nil, s.fenced(ctx, l.Token)
	}
	return cur, nil
}

// put writes cur, which current returned: an update, or the creation of
// a Lease found missing.
func (s *Store) put(ctx context.Context, cur *coordinationv1.Lease) error {
	if cur.ResourceVersion == "" {
		return s.c.Create(ctx, cur)
	}
	return s.c.Update(ctx, cur)
}

// Refresh extends l by its TTL from now. A Lease found missing while l
// is the last lease issued is created again for l (its holder, TTL and
// token); one an Acquire put back as held by an unknown holder gets l's
// holder and TTL back.
func (s *Store) Refresh(ctx context.Context, l state.Lease) (state.Lease, error) {
	var expires time.Time
	err := s.update(ctx, l, "refresh", func(cur *coordinationv1.Lease, start time.Time) {
		now := metav1.NewMicroTime(start)
		cur.Spec.RenewTime = &now
		if holderOf(cur) == unknownHolder && l.Holder != "" && l.TTL > 0 {
			// Put back by an Acquire, with the acquirer's TTL: the
			// holder's lease is its own again.
			secs := int32(min(math.Ceil(l.TTL.Seconds()), math.MaxInt32))
			cur.Spec.HolderIdentity, cur.Spec.LeaseDurationSeconds = &l.Holder, &secs
		}
		expires = start.Add(time.Duration(*cur.Spec.LeaseDurationSeconds) * time.Second)
	})
	if err != nil {
		return state.Lease{}, err
	}
	l.Expires = expires
	return l, nil
}

// update writes the Lease of l, as current returns it and change makes
// it (given the time from before the read). A write that conflicts (the
// Lease changed since it was read: an Acquire put it back, held by an
// unknown holder under l's token, just before this handle created it)
// reads it again and judges it again.
func (s *Store) update(ctx context.Context, l state.Lease, verb string, change func(cur *coordinationv1.Lease, start time.Time)) error {
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := s.now()
		cur, err := s.current(ctx, l)
		if err != nil {
			return err
		}
		change(cur, start)
		err = s.put(ctx, cur)
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return errorf("%s %s: %w", verb, s.path("Lease", s.name), err)
		}
		if try == 10 {
			return errorf("%s %s: it keeps changing under this handle: %w", verb, s.path("Lease", s.name), err)
		}
	}
}

// Release frees the Lease; its token stays, so the next one is higher. A
// Lease found missing while l is the last lease issued is created free,
// with l's token.
func (s *Store) Release(ctx context.Context, l state.Lease) error {
	return s.update(ctx, l, "release", func(cur *coordinationv1.Lease, _ time.Time) {
		cur.Spec.HolderIdentity = nil
	})
}
