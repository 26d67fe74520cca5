package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/internal/codec"
)

// Store is a state.Store and state.Lock under one key prefix of an etcd
// cluster. It is safe for concurrent use; any number of Stores, in any
// number of processes, may share a prefix.
type Store struct {
	cli                *clientv3.Client
	statusKey, lockKey string
}

// New returns the store of the run under prefix (e.g. "/hopdag/prod/").
// The client stays the caller's to close.
func New(cli *clientv3.Client, prefix string) *Store {
	return &Store{cli: cli, statusKey: prefix + "status", lockKey: prefix + "lock"}
}

// Load reads the status; nil and no error when none was saved.
func (s *Store) Load(ctx context.Context) (*runner.Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.statusKey)
	if err != nil {
		return nil, errorf("load %s: %w", s.statusKey, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	st, err := codec.Unmarshal(resp.Kvs[0].Value)
	if err != nil {
		return nil, &state.CorruptError{Path: s.statusKey, Err: err}
	}
	return st, nil
}

// Save writes st in one transaction with the check of the token against
// the lock key's create revision.
func (s *Store) Save(ctx context.Context, token uint64, st *runner.Status) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := codec.Marshal(st)
	if err != nil {
		return errorf("save: %w", err)
	}
	if !valid(token) {
		return s.fenced(ctx, token)
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.lockKey), "=", int64(token))).
		Then(clientv3.OpPut(s.statusKey, string(b))).
		Else(clientv3.OpGet(s.lockKey)).
		Commit()
	if err != nil {
		return errorf("save %s: %w", s.statusKey, err)
	}
	if !resp.Succeeded {
		return fencedBy(token, resp.Responses[0].GetResponseRange().Kvs)
	}
	return nil
}

// Acquire takes the lock; see state.Lock.
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
	start := time.Now()
	g, err := s.cli.Grant(ctx, int64(math.Ceil(ttl.Seconds())))
	if err != nil {
		return state.Lease{}, errorf("acquire %s: %w", s.lockKey, err)
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.lockKey), "=", 0)).
		Then(clientv3.OpPut(s.lockKey, holder, clientv3.WithLease(g.ID))).
		Else(clientv3.OpGet(s.lockKey)).
		Commit()
	if err != nil || !resp.Succeeded {
		s.revoke(ctx, g.ID)
	}
	if err != nil {
		return state.Lease{}, errorf("acquire %s: %w", s.lockKey, err)
	}
	if !resp.Succeeded {
		return state.Lease{}, s.locked(ctx, resp.Responses[0].GetResponseRange().Kvs)
	}
	return state.Lease{Holder: holder, Token: uint64(resp.Header.Revision), TTL: ttl, Expires: start.Add(ttl)}, nil
}

// Refresh keeps the lock key's etcd lease alive; see state.Lock.
func (s *Store) Refresh(ctx context.Context, l state.Lease) (state.Lease, error) {
	if err := ctx.Err(); err != nil {
		return state.Lease{}, err
	}
	start := time.Now()
	kv, err := s.current(ctx, l.Token)
	if err != nil {
		return state.Lease{}, err
	}
	_, err = s.cli.KeepAliveOnce(ctx, clientv3.LeaseID(kv.Lease))
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		// Expired between the read and the keep-alive.
		return state.Lease{}, s.fenced(ctx, l.Token)
	}
	if err != nil {
		return state.Lease{}, errorf("refresh %s: %w", s.lockKey, err)
	}
	l.Expires = start.Add(l.TTL)
	return l, nil
}

// Release deletes the lock key and revokes its etcd lease; see state.Lock.
func (s *Store) Release(ctx context.Context, l state.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !valid(l.Token) {
		return s.fenced(ctx, l.Token)
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.lockKey), "=", int64(l.Token))).
		Then(clientv3.OpGet(s.lockKey), clientv3.OpDelete(s.lockKey)).
		Else(clientv3.OpGet(s.lockKey)).
		Commit()
	if err != nil {
		return errorf("release %s: %w", s.lockKey, err)
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if !resp.Succeeded {
		return fencedBy(l.Token, kvs)
	}
	s.revoke(ctx, clientv3.LeaseID(kvs[0].Lease))
	return nil
}

// current returns the lock key if token is its create revision, else a
// *state.FencedError.
func (s *Store) current(ctx context.Context, token uint64) (*mvccpb.KeyValue, error) {
	resp, err := s.cli.Get(ctx, s.lockKey)
	if err != nil {
		return nil, errorf("read %s: %w", s.lockKey, err)
	}
	if !valid(token) || len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != int64(token) {
		return nil, fencedBy(token, resp.Kvs)
	}
	return resp.Kvs[0], nil
}

// fenced reads the lock key to say who holds it now.
func (s *Store) fenced(ctx context.Context, token uint64) error {
	resp, err := s.cli.Get(ctx, s.lockKey)
	if err != nil {
		return errorf("read %s: %w", s.lockKey, err)
	}
	return fencedBy(token, resp.Kvs)
}

func fencedBy(token uint64, kvs []*mvccpb.KeyValue) error {
	e := &state.FencedError{Token: token}
	if len(kvs) > 0 {
		e.Holder, e.Current = string(kvs[0].Value), uint64(kvs[0].CreateRevision)
	}
	return e
}

// locked describes the holder of the lock key, asking etcd how long its
// lease has left.
func (s *Store) locked(ctx context.Context, kvs []*mvccpb.KeyValue) error {
	if len(kvs) == 0 {
		// The compare and the read are one transaction: the key is there.
		return &state.LockedError{}
	}
	kv := kvs[0]
	e := &state.LockedError{Holder: string(kv.Value), Token: uint64(kv.CreateRevision)}
	now := time.Now()
	if ttl, err := s.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease)); err == nil && ttl.TTL >= 0 {
		e.Expires = now.Add(time.Duration(ttl.TTL) * time.Second)
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

// valid reports whether token can be a create revision.
func valid(token uint64) bool { return token > 0 && token <= math.MaxInt64 }

func errorf(format string, args ...any) error {
	return fmt.Errorf("state: etcd: "+format, args...)
}
