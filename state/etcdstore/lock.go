package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hopdag/hopdag/state"
)

// unknownHolder names the holder of a lease taken as held when no record
// said who held it (both the lock key and the issued key were deleted).
const unknownHolder = "(unknown: the lock key was missing)"

// issued is the value of prefix+"issued", the lock's record that no etcd
// lease deletes: the last lease issued, with the ID of the etcd lease its
// lock key is bound to. Acquire writes it in the transaction that creates
// the lock key (Token 0: the token is the key's mod revision, which is the
// lock key's create revision), Release writes it without a lease (the
// lock is free), an Acquire that finds neither key writes the lease it
// takes as held (Token set: the status's last token), and claim writes
// it back for the handle that acquired that lease (Token set too).
type issued struct {
	Token  uint64 `json:"token,omitempty"`
	Holder string `json:"holder,omitempty"`
	Lease  int64  `json:"lease,omitempty"`
}

// lockState is the lock as one read of its two keys has it.
type lockState struct {
	lock   *mvccpb.KeyValue // nil when missing
	issued *mvccpb.KeyValue // nil when missing
	rec    issued
	// token and holder are the current lease's; token 0 when the lock
	// is free. lease is its etcd lease, ttl what the server says it has
	// left (counted from start, before the read).
	token  uint64
	holder string
	lease  clientv3.LeaseID
	ttl    time.Duration
	start  time.Time
	// missing: the lock key is gone (deleted by hand) while the lease
	// the issued key names lives: the lease is held all the same.
	missing bool
}

// held reports whether a lease holds the lock.
func (ls *lockState) held() bool { return ls.token != 0 }

// ownLease is a lease a handle acquired: its token, holder and the etcd
// lease its lock key was bound to.
type ownLease struct {
	token  uint64
	holder string
	lease  clientv3.LeaseID
}

func (s *Store) ownLease() ownLease {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	return s.own
}

func (s *Store) setOwn(o ownLease) {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	s.own = o
}

// superseded is the *state.FencedError of token when ls names another
// lease, current or past: this handle forgets token as its own, so that
// it never claims it back once the records are gone again.
func (s *Store) superseded(token uint64, ls *lockState) error {
	if ls.token != 0 || ls.issued != nil && s.issuedToken(ls) != token {
		s.ownMu.Lock()
		if s.own.token == token {
			s.own = ownLease{}
		}
		s.ownMu.Unlock()
	}
	return fencedOf(token, ls)
}

// readLock reads the lock key and the issued key in one transaction, and
// asks the server how long the current lease has left.
func (s *Store) readLock(ctx context.Context) (*lockState, error) {
	ls := &lockState{start: time.Now()}
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(s.lockKey), clientv3.OpGet(s.issuedKey)).Commit()
	if err != nil {
		return nil, errorf("read %s: %w", s.lockKey, err)
	}
	return ls, s.judge(ctx, ls, resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs)
}

// judge fills ls from the two keys' values (each empty when missing).
func (s *Store) judge(ctx context.Context, ls *lockState, lock, iss []*mvccpb.KeyValue) error {
	if len(iss) > 0 {
		ls.issued = iss[0]
		if err := json.Unmarshal(iss[0].Value, &ls.rec); err != nil {
			return &state.CorruptError{Path: s.issuedKey, Err: fmt.Errorf("%q is not the record of the last lease issued, as the store writes it: %w", iss[0].Value, err)}
		}
	}
	if len(lock) > 0 {
		ls.lock = lock[0]
		if ls.lock.Lease == 0 {
			return &state.CorruptError{Path: s.lockKey, Err: fmt.Errorf("the lock key (holder %q) has no etcd lease, so it would never expire: the store binds it to one, and a key put by hand (etcdctl put without --lease) holds no lock; "+
				"check that no coordinator runs on this prefix and put it back with a lease, or let hopdag take the lock when no record of it is left", ls.lock.Value)}
		}
		ls.holder, ls.lease = string(ls.lock.Value), clientv3.LeaseID(ls.lock.Lease)
		ls.token = uint64(ls.lock.CreateRevision)
		if ls.issued != nil && ls.rec.Lease == ls.lock.Lease {
			// Put back by the holder's Refresh (or a commit): the token is
			// the issued key's.
			ls.token = s.issuedToken(ls)
		}
	} else if ls.issued != nil && ls.rec.Lease != 0 {
		ls.token, ls.holder, ls.lease, ls.missing = s.issuedToken(ls), ls.rec.Holder, clientv3.LeaseID(ls.rec.Lease), true
	}
	if !ls.held() {
		return nil
	}
	ttl, err := s.cli.TimeToLive(ctx, ls.lease)
	if err != nil {
		return errorf("read the lease of %s: %w", s.lockKey, err)
	}
	if ttl.TTL <= 0 {
		// Expired, or revoked by a Release that did not get to write
		// the issued key: the lock is free, and its key went with it.
		ls.token, ls.holder, ls.lease, ls.missing = 0, "", 0, false
		return nil
	}
	ls.ttl = time.Duration(ttl.TTL) * time.Second
	return nil
}

// issuedToken is the token of the lease the issued key names.
func (s *Store) issuedToken(ls *lockState) uint64 {
	if ls.rec.Token != 0 {
		return ls.rec.Token
	}
	return uint64(ls.issued.ModRevision)
}

// issuedRev is the compare of the issued key as ls read it.
func (s *Store) issuedRev(ls *lockState) clientv3.Cmp {
	if ls.issued == nil {
		return clientv3.Compare(clientv3.CreateRevision(s.issuedKey), "=", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(s.issuedKey), "=", ls.issued.ModRevision)
}

// lockRev is the compare of the lock key as ls read it.
func (s *Store) lockRev(ls *lockState) clientv3.Cmp {
	if ls.lock == nil {
		return clientv3.Compare(clientv3.CreateRevision(s.lockKey), "=", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(s.lockKey), "=", ls.lock.ModRevision)
}

// Acquire takes the lock; see state.Lock. The lock is held while the
// lock key exists, and, when it was deleted (by hand), while the etcd
// lease the issued key names lives (see the package documentation).
func (s *Store) Acquire(ctx context.Context, holder string, ttl time.Duration) (state.Lease, error) {
	if err := ctx.Err(); err != nil {
		return state.Lease{}, err
	}
	if holder == "" {
		return state.Lease{}, errorf("acquire: empty holder name; name the holder, e.g. host/pid")
	}
	if ttl <= 0 {
		return state.Lease{}, errorf("acquire: ttl %v is not positive", ttl)
	}
	secs := int64(math.Ceil(ttl.Seconds()))
	for try := 0; ; try++ {
		ls, err := s.readLock(ctx)
		if err != nil {
			return state.Lease{}, err
		}
		if ls.held() {
			return state.Lease{}, s.locked(ls)
		}
		if ls.issued == nil {
			// No record of the last lease: deleted, or a prefix written
			// before the store kept one. If the status was written, its
			// writer may still run.
			written, err := s.lastWritten(ctx)
			if err != nil {
				return state.Lease{}, err
			}
			if written != 0 {
				if err := s.placeholder(ctx, ls, written, secs); err != nil {
					return state.Lease{}, err
				}
				continue // read it back: held, or taken by another since
			}
		}
		start := time.Now()
		g, err := s.cli.Grant(ctx, secs)
		if err != nil {
			return state.Lease{}, errorf("acquire %s: %w", s.lockKey, err)
		}
		rec, _ := json.Marshal(issued{Holder: holder, Lease: int64(g.ID)})
		resp, err := s.cli.Txn(ctx).
			If(s.lockRev(ls), s.issuedRev(ls)).
			Then(clientv3.OpPut(s.lockKey, holder, clientv3.WithLease(g.ID)), clientv3.OpPut(s.issuedKey, string(rec))).
			Commit()
		if err != nil || !resp.Succeeded {
			s.revoke(ctx, g.ID)
		}
		if err != nil {
			return state.Lease{}, errorf("acquire %s: %w", s.lockKey, err)
		}
		if resp.Succeeded {
			token := uint64(resp.Header.Revision)
			s.setOwn(ownLease{token: token, holder: holder, lease: g.ID})
			return state.Lease{Holder: holder, Token: token, TTL: ttl, Expires: start.Add(ttl)}, nil
		}
		if try == 10 {
			return state.Lease{}, errorf("acquire %s: the lock keeps changing under this handle", s.lockKey)
		}
		// Another acquirer (or a release) came first: look again.
	}
}

// placeholder records, in the issued key, the lease that wrote the
// status (token written) as held by an unknown holder for one TTL from
// now (an etcd lease of secs that nobody refreshes: the holder's claim
// revokes it), so that Acquires that find no record again do not extend
// it.
func (s *Store) placeholder(ctx context.Context, ls *lockState, written uint64, secs int64) error {
	g, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return errorf("acquire %s: %w", s.lockKey, err)
	}
	rec, _ := json.Marshal(issued{Token: written, Holder: unknownHolder, Lease: int64(g.ID)})
	resp, err := s.cli.Txn(ctx).If(s.lockRev(ls), s.issuedRev(ls)).Then(clientv3.OpPut(s.issuedKey, string(rec))).Commit()
	if err != nil || !resp.Succeeded {
		s.revoke(ctx, g.ID)
	}
	if err != nil {
		return errorf("acquire %s: %w", s.lockKey, err)
	}
	return nil
}

// restore puts back the lock key of the lease ls holds as missing, bound
// to the etcd lease the issued key names (which the server checks is
// alive), unless either key changed since ls was read.
func (s *Store) restore(ctx context.Context, ls *lockState) error {
	_, err := s.cli.Txn(ctx).If(s.lockRev(ls), s.issuedRev(ls)).
		Then(clientv3.OpPut(s.lockKey, ls.holder, clientv3.WithLease(ls.lease))).Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil // expired since: the caller finds it fenced
	}
	if err != nil {
		return errorf("put back %s: %w", s.lockKey, err)
	}
	return nil
}

// claimable reports whether the lock's records, as ls has them, do not
// name the etcd lease of a lease under token that may still run, so that
// only claim can tell: both keys missing (the status's last writer may
// run), the issued key naming a lease taken as held by an unknown holder
// (an Acquire found both missing), or a lock key put back by its holder
// whose issued key was deleted since (its create revision is not the
// token).
func claimable(ls *lockState, token uint64) bool {
	switch {
	case ls.issued != nil:
		return ls.rec.Holder == unknownHolder
	case ls.lock != nil:
		return ls.lock.CreateRevision != int64(token)
	default:
		return true
	}
}

// claim takes back, for this handle's own lease, a lease under token
// that the lock's records no longer name (claimable): only the handle
// that acquired token knows its etcd lease, and only while that etcd
// lease lives is its holder alive; a lease taken as held by an unknown
// holder is otherwise the status's last writer's, which may be a lease
// long released or expired, after which another was acquired. With both
// keys missing, written is the status's last token, which must be
// token. claim writes both keys again, the lock key bound to the
// handle's etcd lease, unless either changed since ls was read (the
// caller reads them again); a refused claim is a *state.FencedError.
func (s *Store) claim(ctx context.Context, ls *lockState, token, written uint64) error {
	o := s.ownLease()
	ok := o.token == token
	switch {
	case ls.issued != nil:
		ok = ok && ls.rec.Token == token
	case ls.lock != nil:
		ok = ok && ls.lock.Lease == int64(o.lease)
	default:
		ok = ok && written == token
	}
	if !ok {
		return s.unclaimed(token, ls, written)
	}
	rec, _ := json.Marshal(issued{Token: token, Holder: o.holder, Lease: int64(o.lease)})
	_, err := s.cli.Txn(ctx).If(s.lockRev(ls), s.issuedRev(ls)).
		Then(clientv3.OpPut(s.lockKey, o.holder, clientv3.WithLease(o.lease)), clientv3.OpPut(s.issuedKey, string(rec))).
		Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return s.unclaimed(token, ls, written) // the holder's etcd lease expired
	}
	if err != nil {
		return errorf("put back %s and %s: %w", s.lockKey, s.issuedKey, err)
	}
	if ls.issued != nil && ls.rec.Lease != int64(o.lease) {
		s.revoke(ctx, clientv3.LeaseID(ls.rec.Lease)) // the lease an Acquire granted the unknown holder
	}
	return nil
}

// unclaimed is the *state.FencedError of a refused claim, saying why
// when token is the one the lock is taken as held by.
func (s *Store) unclaimed(token uint64, ls *lockState, written uint64) error {
	fe := fencedOf(token, ls)
	if !ls.held() && written != 0 {
		fe.Holder, fe.Current = unknownHolder, written
	}
	if fe.Current != token {
		return fe // another lease's
	}
	return fmt.Errorf("state: etcd: lease %d is taken as held since %s and %s were deleted, but only the handle that acquired it takes it back, while its etcd lease lives: this one did not acquire it, or that etcd lease expired; acquire the lock again: %w",
		token, s.lockKey, s.issuedKey, fe)
}

// fence is the compares of a write under token: the lock key's create
// revision is the token, or, once the lock key was put back, the issued
// key is the one that named the token and the lock key is bound to its
// etcd lease (which is then alive). A new acquisition and a release
// rewrite the issued key; an expiry deletes the lock key.
func (s *Store) fence(token uint64) []clientv3.Cmp {
	if s.fenceOf == token && s.fenceCmps != nil {
		return append([]clientv3.Cmp(nil), s.fenceCmps...)
	}
	return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(s.lockKey), "=", int64(token))}
}

// refence decides a write under token that failed its compares, from
// the lock and issued keys the failed transaction read: nil when the
// token is still the current lease's (the view was stale, or the fence
// changed: write again), after putting the lock key back if it was
// missing; else a *state.FencedError.
func (s *Store) refence(ctx context.Context, token uint64, resp *clientv3.TxnResponse) error {
	ls := &lockState{start: time.Now()}
	if err := s.judge(ctx, ls, resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs); err != nil {
		return err
	}
	if claimable(ls, token) {
		written := uint64(0)
		if ls.lock == nil && ls.issued == nil {
			if _, err := s.load(ctx); err != nil { // s.mu is held
				return err
			}
			written = s.token
		}
		return s.claim(ctx, ls, token, written)
	}
	if !ls.held() || ls.token != token {
		return s.superseded(token, ls)
	}
	if ls.missing {
		if err := s.restore(ctx, ls); err != nil {
			return err
		}
	}
	if ls.lock == nil || ls.lock.CreateRevision != int64(token) {
		s.fenceOf, s.fenceCmps = token, []clientv3.Cmp{
			s.issuedRev(ls),
			clientv3.Compare(clientv3.LeaseValue(s.lockKey), "=", ls.lease),
		}
	}
	return nil
}

// Refresh keeps the lease's etcd lease alive; see state.Lock. When the
// lock key is missing and the lease is the one the issued key names, it
// puts the key back first; when the lock's records no longer name the
// lease, the handle that acquired it puts them back (see claim).
func (s *Store) Refresh(ctx context.Context, l state.Lease) (state.Lease, error) {
	if err := ctx.Err(); err != nil {
		return state.Lease{}, err
	}
	start := time.Now()
	ls, err := s.current(ctx, l.Token)
	if err != nil {
		return state.Lease{}, err
	}
	if ls.missing {
		if err := s.restore(ctx, ls); err != nil {
			return state.Lease{}, err
		}
	}
	ka, err := s.cli.KeepAliveOnce(ctx, ls.lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		// Expired between the read and the keep-alive.
		return state.Lease{}, s.fenced(ctx, l.Token)
	}
	if err != nil {
		return state.Lease{}, errorf("refresh %s: %w", s.lockKey, err)
	}
	// The etcd lease may be shorter than l's TTL (one an Acquire granted
	// when it found no record): the holder never counts on more than the
	// server gives.
	l.Expires = start.Add(min(l.TTL, time.Duration(ka.TTL)*time.Second))
	return l, nil
}

// Release deletes the lock key, records a free lock in the issued key
// and revokes the etcd lease; see state.Lock.
func (s *Store) Release(ctx context.Context, l state.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ls, err := s.current(ctx, l.Token)
	if err != nil {
		return err
	}
	rec, _ := json.Marshal(issued{Token: l.Token})
	resp, err := s.cli.Txn(ctx).
		If(s.lockRev(ls), s.issuedRev(ls)).
		Then(clientv3.OpDelete(s.lockKey), clientv3.OpPut(s.issuedKey, string(rec))).
		Else(clientv3.OpGet(s.lockKey), clientv3.OpGet(s.issuedKey)).
		Commit()
	if err != nil {
		return errorf("release %s: %w", s.lockKey, err)
	}
	if !resp.Succeeded {
		// Changed since the read: released, taken over or put back.
		return s.Release(ctx, l)
	}
	if s.ownLease().token == l.Token {
		s.setOwn(ownLease{})
	}
	s.revoke(ctx, ls.lease)
	return nil
}

// current reads the lock and returns it if token is its current lease's,
// else a *state.FencedError.
func (s *Store) current(ctx context.Context, token uint64) (*lockState, error) {
	if !valid(token) {
		return nil, s.fenced(ctx, token)
	}
	ls, err := s.readLock(ctx)
	if err != nil {
		return nil, err
	}
	if claimable(ls, token) {
		written := uint64(0)
		if ls.lock == nil && ls.issued == nil {
			if written, err = s.lastWritten(ctx); err != nil {
				return nil, err
			}
		}
		if err := s.claim(ctx, ls, token, written); err != nil {
			return nil, err
		}
		if ls, err = s.readLock(ctx); err != nil {
			return nil, err
		}
	}
	if !ls.held() || ls.token != token {
		return nil, s.superseded(token, ls)
	}
	return ls, nil
}

// lastWritten loads the status and returns the greatest token it was
// written under (0: nothing was saved).
func (s *Store) lastWritten(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.load(ctx); err != nil {
		return 0, err
	}
	return s.token, nil
}

// fenced reads the lock to say who holds it now.
func (s *Store) fenced(ctx context.Context, token uint64) error {
	ls, err := s.readLock(ctx)
	if err != nil {
		return err
	}
	return fencedOf(token, ls)
}

func fencedOf(token uint64, ls *lockState) *state.FencedError {
	e := &state.FencedError{Token: token}
	if ls.held() {
		e.Holder, e.Current = ls.holder, ls.token
	}
	return e
}

// locked is the *state.LockedError of a held lock.
func (s *Store) locked(ls *lockState) error {
	e := &state.LockedError{Holder: ls.holder, Token: ls.token, Expires: ls.start.Add(ls.ttl)}
	if ls.missing {
		e.Missing = s.lockKey
	}
	return e
}

// revoke revokes an etcd lease, best effort: if it fails the lease
// expires by itself.
func (s *Store) revoke(ctx context.Context, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = s.cli.Revoke(ctx, id)
}
