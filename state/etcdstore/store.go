package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/codec"
)

// Store is a state.Store and state.Lock under one key prefix of an etcd
// cluster. It is safe for concurrent use; any number of Stores, in any
// number of processes, may share a prefix.
type Store struct {
	cli       *clientv3.Client
	prefix    string
	lockKey   string
	issuedKey string

	mu sync.Mutex // guards the view below and serialises this handle's writes
	// The status as this handle last saw it.
	fresh   bool
	seq     uint64 // last commit
	token   uint64 // greatest token written
	headRev int64  // the snapshot head's mod revision (0: none)
	logSize int64  // bytes of commits since the snapshot
	snapLen int64  // bytes of the snapshot
	counts  int    // components of the stored status
	exists  bool
	written int64 // status bytes this handle wrote
	// base is the hops as the last record read or written has them: what
	// the next commit records the changes of.
	base codec.Base
	// fenceOf, when not 0, is a token whose lock key was put back (see
	// fence); fenceCmps are then the compares of its writes.
	fenceOf   uint64
	fenceCmps []clientv3.Cmp

	// own is the last lease this handle acquired, with the etcd lease
	// its lock key was bound to: what proves the lease alive when the
	// lock's records no longer name it (see claim). ownMu guards it (not
	// mu, which writes hold across requests).
	ownMu sync.Mutex
	own   ownLease
}

// Limits of one write. etcd refuses requests over --max-request-bytes
// (1.5 MiB by default); every value stays well under it, whatever the run's
// size.
const (
	maxValue   = 256 << 10 // a commit or a shard
	maxTxn     = 1 << 20   // the values of one transaction
	minJournal = 1 << 20
)

// New returns the store of the run under prefix (e.g. "/hopdag/prod/").
// The client stays the caller's to close.
func New(cli *clientv3.Client, prefix string) *Store {
	return &Store{cli: cli, prefix: prefix, lockKey: prefix + "lock", issuedKey: prefix + "issued"}
}

func (s *Store) headKey() string { return s.prefix + "snap" }

func (s *Store) shardKey(seq uint64, i int) string {
	return fmt.Sprintf("%ssnap/%020d/%06d", s.prefix, seq, i)
}

func (s *Store) logKey(seq uint64) string { return fmt.Sprintf("%slog/%020d", s.prefix, seq) }

// Kinds of keys under the prefix.
const (
	keyForeign = iota // not a name of the store's: another run's
	keyOwn            // the head, a shard, the lock
	keyIssued         // the record of the last lease issued
	keyLog            // a commit: log/ and 20 digits
	keyNested         // a key that starts as the store's own log or shard keys do, and goes on
)

// keyKind tells the store's own keys (of their exact forms) from others
// under its prefix: a run whose prefix is nested in this one's (P/site/
// and P/site/log/) has keys under it that this run ignores.
func (s *Store) keyKind(k string) int {
	rest, ok := strings.CutPrefix(k, s.prefix)
	if !ok {
		return keyForeign
	}
	switch rest {
	case "snap", "lock":
		return keyOwn
	case "issued":
		return keyIssued
	}
	if seq, ok := strings.CutPrefix(rest, "log/"); ok && len(seq) >= 20 && digits(seq[:20]) {
		if len(seq) == 20 {
			return keyLog
		}
		return keyNested
	}
	if sh, ok := strings.CutPrefix(rest, "snap/"); ok && len(sh) >= 20 && digits(sh[:20]) {
		if len(sh) == 27 && sh[20] == '/' && digits(sh[21:]) {
			return keyOwn
		}
		return keyNested
	}
	return keyForeign
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Load reads the snapshot and replays the commits after it, in one
// consistent read; nil and no error when none was saved.
func (s *Store) Load(ctx context.Context) (*record.Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	return st.Status, nil
}

func (s *Store) corrupt(key string, off int64, err error) error {
	return &state.CorruptError{Path: key, Offset: off, Err: err}
}

// load reads the run's keys and adds up the status they hold, in steps:
// sort the keys (keys), apply the snapshot (readSnapshot), replay the
// commits after it (replay), and keep what the next commit needs
// (adopt). Whatever is wrong is a *state.CorruptError naming the key.
func (s *Store) load(ctx context.Context) (*codec.State, error) {
	s.fresh = false
	resp, err := s.cli.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, errorf("load %s: %w", s.prefix, err)
	}
	kvs, logs, err := s.keys(resp.Kvs)
	if err != nil {
		return nil, err
	}
	st := &codec.State{}
	s.headRev, s.snapLen, s.logSize = 0, 0, 0
	if err := s.readSnapshot(st, kvs, logs); err != nil {
		return nil, err
	}
	if err := s.replay(st, logs); err != nil {
		return nil, err
	}
	if err := st.Check(); err != nil {
		return nil, s.corrupt(s.prefix, 0, fmt.Errorf("the status the records add up to is not valid: %w", err))
	}
	s.adopt(st)
	s.fresh = true
	return st, nil
}

// keys returns the run's keys by name, and its commits (log/) in key
// order, which is seq order. It checks the record of the last lease
// issued, skips another run's keys under a prefix nested in this one, and
// refuses a key nested under this run's own.
func (s *Store) keys(all []*mvccpb.KeyValue) (map[string]*mvccpb.KeyValue, []*mvccpb.KeyValue, error) {
	kvs := map[string]*mvccpb.KeyValue{}
	var logs []*mvccpb.KeyValue
	for _, kv := range all {
		k := string(kv.Key)
		switch s.keyKind(k) {
		case keyLog:
			logs = append(logs, kv) // sorted by key: by seq
		case keyForeign:
			continue // another run's, under a prefix nested in this one
		case keyIssued:
			var rec issued
			if err := json.Unmarshal(kv.Value, &rec); err != nil {
				return nil, nil, &state.CorruptError{Path: k, Err: fmt.Errorf("%q is not the record of the last lease issued, as the store writes it: %w", kv.Value, err)}
			}
		case keyNested:
			return nil, nil, errorf("load %s: key %s is under this run's own keys (%slog/ and %ssnap/ and 20 digits): a run whose prefix is nested there would have its keys deleted by this one's snapshots; give the runs prefixes that do not nest", s.prefix, k, s.prefix, s.prefix)
		}
		kvs[k] = kv
	}
	return kvs, logs, nil
}

// readSnapshot applies the snapshot head and its shards to st, and sets
// headRev and snapLen. No snapshot is an empty store, unless there are
// commits: every commit follows a snapshot.
func (s *Store) readSnapshot(st *codec.State, kvs map[string]*mvccpb.KeyValue, logs []*mvccpb.KeyValue) error {
	head, ok := kvs[s.headKey()]
	if !ok && len(logs) > 0 {
		return s.corrupt(s.headKey(), 0, fmt.Errorf("the snapshot head is missing: commits %s and on are there, and every commit follows a snapshot", strings.TrimPrefix(string(logs[0].Key), s.prefix+"log/")))
	}
	if !ok {
		return nil
	}
	s.headRev = head.ModRevision
	r, err := codec.Unframe(head.Value)
	if err == nil && r.Kind != codec.KindSnapshot {
		err = fmt.Errorf("a %s record, want a snapshot head", r.Kind)
	}
	if err == nil {
		err = st.Apply(r)
	}
	if err != nil {
		return s.corrupt(s.headKey(), 0, err)
	}
	s.snapLen = int64(len(head.Value))
	for i := range r.Shards {
		key := s.shardKey(r.Seq, i)
		kv, ok := kvs[key]
		if !ok {
			return s.corrupt(key, 0, fmt.Errorf("shard %d of %d of snapshot %d is missing", i, r.Shards, r.Seq))
		}
		sh, err := codec.Unframe(kv.Value)
		if err == nil && (sh.Kind != codec.KindShard || sh.Seq != r.Seq || sh.Shard != i) {
			err = fmt.Errorf("a %s of seq %d, want shard %d of seq %d", sh.Kind, sh.Seq, i, r.Seq)
		}
		if err == nil {
			err = st.Apply(sh)
		}
		if err != nil {
			return s.corrupt(key, 0, err)
		}
		s.snapLen += int64(len(kv.Value))
	}
	st.Seq = r.Seq
	return nil
}

// replay applies the commits after the snapshot to st, and sets logSize.
// Commits the snapshot already holds (a crash before their keys were
// deleted) only raise the token.
func (s *Store) replay(st *codec.State, logs []*mvccpb.KeyValue) error {
	for _, kv := range logs {
		key := string(kv.Key)
		r, err := codec.Unframe(kv.Value)
		if err == nil && !r.IsCommit() {
			err = fmt.Errorf("a %s record under log/", r.Kind)
		}
		if err == nil && key != s.logKey(r.Seq) {
			err = fmt.Errorf("commit %d under the key of another", r.Seq)
		}
		if err == nil && r.Seq > st.Seq && r.Seq != st.Seq+1 {
			err = fmt.Errorf("commit %d follows %d: commits are missing", r.Seq, st.Seq)
		}
		if err == nil && r.Seq > st.Seq {
			err = st.Apply(r)
			s.logSize += int64(len(kv.Value))
		}
		if err != nil {
			return s.corrupt(key, 0, err)
		}
		st.Token = max(st.Token, r.Token)
	}
	return nil
}

// adopt keeps what the next commit needs of the state just loaded.
func (s *Store) adopt(st *codec.State) {
	s.seq, s.token, s.exists = st.Seq, st.Token, st.Status != nil
	s.base = codec.BaseOf(st.Status)
	s.counts = 0
	if st.Status != nil {
		for _, h := range st.Status.Hops {
			s.counts += len(h.Components)
		}
	}
}

// Save writes st whole: a snapshot.
func (s *Store) Save(ctx context.Context, token uint64, st *record.Status) error {
	return s.commit(ctx, token, st, nil, true)
}

// Commit writes the changed components of st: one value of at most 256
// KiB per transaction, under log/<seq>.
func (s *Store) Commit(ctx context.Context, token uint64, st *record.Status, changed []record.Ref) error {
	return s.commit(ctx, token, st, changed, false)
}

func (s *Store) commit(ctx context.Context, token uint64, st *record.Status, changed []record.Ref, all bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if st == nil {
		return errorf("save: nil status")
	}
	if !valid(token) {
		return s.fenced(ctx, token)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for try := 0; ; try++ {
		if !s.fresh {
			if _, err := s.load(ctx); err != nil {
				return err
			}
		}
		// (A token below the status's is fenced by the lock compare:
		// tokens are etcd revisions, so the lock key's is above it.)
		stale, err := s.write(ctx, token, st, changed, all)
		if err != nil || !stale {
			if err != nil {
				s.fresh = false
			}
			return err
		}
		// Another handle wrote since this one looked: look again, after
		// a pause that spreads out handles racing each other.
		s.fresh = false
		if try == 100 {
			return errorf("save %s: the status keeps changing under this handle; is another coordinator writing it without the lock?", s.prefix)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(rand.IntN(5)+1) * time.Millisecond):
		}
	}
}

// write writes a commit or a snapshot, each transaction conditional on
// the lock (fencing) and on the view (the next commit key is free, the
// snapshot head unchanged). stale reports a view that was out of date.
func (s *Store) write(ctx context.Context, token uint64, st *record.Status, changed []record.Ref, all bool) (stale bool, err error) {
	total := 0
	for _, h := range st.Hops {
		total += len(h.Components)
	}
	fence := s.fence(token)
	head := clientv3.Compare(clientv3.ModRevision(s.headKey()), "=", s.headRev)
	if !all && s.exists && total == s.counts && 2*len(changed) <= total && s.logSize <= max(minJournal, s.snapLen) {
		lines, next, err := codec.Commits(s.seq+1, token, st, changed, maxValue, s.base)
		if err != nil {
			return false, errorf("save: %w", err)
		}
		for _, line := range lines {
			key := s.logKey(s.seq + 1)
			ok, err := s.txn(ctx, token, append(fence, head, clientv3.Compare(clientv3.CreateRevision(key), "=", 0)),
				clientv3.OpPut(key, string(line)))
			if err != nil || !ok {
				// Another handle wrote first: look again and write the
				// changes again, also when lines before this one are in
				// (they are then written twice; none is lost).
				return err == nil, err
			}
			s.seq++
			s.logSize += int64(len(line))
			// The first line carries the hops that changed.
			s.base = next
		}
		s.token = token
		return false, nil
	}
	next := s.seq + 1
	lines, err := codec.Snapshot(next, token, st, maxValue)
	if err != nil {
		return false, errorf("save: %w", err)
	}
	// The shards first, under keys of their own, a few per transaction;
	// then the head, which makes them the snapshot, with the old
	// snapshot's shards and the commits it includes deleted in the same
	// transaction. A crash in between leaves shards no head names: the
	// next snapshot deletes them.
	var ops []clientv3.Op
	size := 0
	flush := func() (bool, error) {
		if len(ops) == 0 {
			return true, nil
		}
		ok, err := s.txn(ctx, token, append(fence, head), ops...)
		ops, size = ops[:0], 0
		return ok, err
	}
	for i, line := range lines[1:] {
		if size+len(line) > maxTxn {
			if ok, err := flush(); err != nil || !ok {
				return err == nil, err
			}
		}
		ops = append(ops, clientv3.OpPut(s.shardKey(next, i), string(line)))
		size += len(line)
	}
	if ok, err := flush(); err != nil || !ok {
		return err == nil, err
	}
	// The head only if no commit came after the view (another handle of
	// the same holder): the snapshot replaces the commits up to its seq,
	// and a later one left behind would be replayed on top of it.
	free := clientv3.Compare(clientv3.CreateRevision(s.logKey(next)), "=", 0)
	ok, err := s.txnRev(ctx, token, &s.headRev, append(fence, head, free),
		clientv3.OpPut(s.headKey(), string(lines[0])),
		// From the first key of each form (not from snap/ or log/
		// alone: a run nested at P/log/ keeps its keys).
		clientv3.OpDelete(s.shardKey(0, 0), clientv3.WithRange(fmt.Sprintf("%ssnap/%020d", s.prefix, next))),
		clientv3.OpDelete(s.logKey(0), clientv3.WithRange(s.logKey(next+1))),
	)
	if err != nil || !ok {
		return err == nil, err
	}
	s.seq, s.token, s.exists, s.counts, s.logSize = next, token, true, total, 0
	s.base = codec.BaseOf(st)
	s.snapLen = 0
	for _, l := range lines {
		s.snapLen += int64(len(l))
	}
	return false, nil
}

// txn runs ops if cmps hold. A failed lock compare is a *FencedError; ok
// is false when only the view was stale.
func (s *Store) txn(ctx context.Context, token uint64, cmps []clientv3.Cmp, ops ...clientv3.Op) (bool, error) {
	return s.txnRev(ctx, token, nil, cmps, ops...)
}

// txnRev is txn that sets *rev to the transaction's revision if it
// succeeded.
func (s *Store) txnRev(ctx context.Context, token uint64, rev *int64, cmps []clientv3.Cmp, ops ...clientv3.Op) (bool, error) {
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(s.lockKey), clientv3.OpGet(s.issuedKey)).Commit()
	if err != nil {
		return false, errorf("save %s: %w", s.prefix, err)
	}
	if resp.Succeeded {
		for _, op := range ops {
			s.written += int64(len(op.ValueBytes()))
		}
		if rev != nil {
			*rev = resp.Header.Revision
		}
		return true, nil
	}
	return false, s.refence(ctx, token, resp)
}

// valid reports whether token can be a create revision.
func valid(token uint64) bool { return token > 0 && token <= math.MaxInt64 }

func errorf(format string, args ...any) error {
	return fmt.Errorf("state: etcd: "+format, args...)
}
