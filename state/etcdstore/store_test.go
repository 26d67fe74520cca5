package etcdstore_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/etcdstore"
	"github.com/hopdag/hopdag/state/statetest"
)

var prefixes atomic.Int64

// prefix is a key prefix no other test of this server uses: fresh,
// empty storage.
func prefix() string { return fmt.Sprintf("/hopdag-test/%d/", prefixes.Add(1)) }

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.Env {
		cli := client(t)
		p := prefix()
		return statetest.Env{
			Open: func() statetest.Backend { return etcdstore.New(client(t), p) },
			// etcd expires a lease by revoking it; do that now.
			Expire: func(l state.Lease) { expire(t, cli, p, l) },
			// Long enough that no lease expires by itself on a slow
			// machine; the Fencing case waits at most a third of it for
			// the paused keeper's next refresh.
			TTL:     6 * time.Second,
			Raw:     keysRaw{t, cli, p},
			Journal: "", // a value is committed whole or not at all
		}
	})
}

// The lock key lives as long as its etcd lease: a holder that stops
// refreshing loses it when etcd says so.
func TestLeaseExpiresOnServer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for etcd to expire a lease")
	}
	cli := client(t)
	p := prefix()
	s := etcdstore.New(cli, p)
	l, err := s.Acquire(t.Context(), "a", time.Second)
	require.NoError(t, err)
	resp, err := cli.Get(t.Context(), p+"lock")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, "a", string(resp.Kvs[0].Value))
	assert.Equal(t, int64(l.Token), resp.Kvs[0].CreateRevision, "the token is the lock key's create revision")
	ttl, err := cli.TimeToLive(t.Context(), clientv3.LeaseID(resp.Kvs[0].Lease))
	require.NoError(t, err)
	require.Positive(t, ttl.GrantedTTL)

	// Wait, with a generous bound, for the server to delete the key.
	w := cli.Watch(t.Context(), p+"lock", clientv3.WithRev(resp.Header.Revision+1))
	select {
	case ev := <-w:
		require.NoError(t, ev.Err())
		require.NotEmpty(t, ev.Events)
		assert.Equal(t, clientv3.EventTypeDelete, ev.Events[0].Type)
	case <-time.After(time.Minute):
		t.Fatalf("etcd kept a lease of %ds for a minute", ttl.GrantedTTL)
	}
	err = s.Save(t.Context(), l.Token, statetest.Sample(1))
	require.ErrorIs(t, err, state.ErrFenced)
	l2, err := s.Acquire(t.Context(), "b", time.Minute)
	require.NoError(t, err)
	assert.Greater(t, l2.Token, l.Token)
}

func BenchmarkSave(b *testing.B) {
	statetest.BenchSave(b, etcdstore.New(client(b), prefix()))
}

// BenchmarkDurableRun is statetest.BenchDurableRun on the shared etcd
// server, reporting also db-MiB: the server's database size after the
// runs (run one sub-benchmark at a time, -benchtime 1x, on a fresh server
// for the figure of one run):
//
//	go test -run '^$' -bench 'DurableRun/n=10000' -benchtime 1x ./state/etcdstore
//
// Target: n=10000 succeeds with db-MiB at most 64.
func BenchmarkDurableRun(b *testing.B) {
	cli := client(b)
	statetest.BenchDurableRun(b, statetest.DurableRun{
		Open:    func(b *testing.B) statetest.Backend { return etcdstore.New(cli, prefix()) },
		Written: func(be statetest.Backend) int64 { return etcdstore.Written(be.(*etcdstore.Store)) },
		Report: func(b *testing.B) {
			st, err := cli.Status(b.Context(), cli.Endpoints()[0])
			require.NoError(b, err)
			b.ReportMetric(float64(st.DbSize)/(1<<20), "db-MiB")
		},
	})
}

// keysRaw is the keys of a store's prefix as a statetest.Raw: every key
// but the lock's (its value is only the holder's name).
type keysRaw struct {
	t      *testing.T
	cli    *clientv3.Client
	prefix string
}

func (r keysRaw) Names() []string {
	resp, err := r.cli.Get(r.t.Context(), r.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(r.t, err)
	var names []string
	for _, kv := range resp.Kvs {
		if k := strings.TrimPrefix(string(kv.Key), r.prefix); k != "lock" {
			names = append(names, k)
		}
	}
	return names
}

func (r keysRaw) Read(name string) []byte {
	resp, err := r.cli.Get(r.t.Context(), r.prefix+name)
	require.NoError(r.t, err)
	if len(resp.Kvs) == 0 {
		return nil
	}
	return resp.Kvs[0].Value
}

func (r keysRaw) Write(name string, data []byte) {
	_, err := r.cli.Put(r.t.Context(), r.prefix+name, string(data))
	require.NoError(r.t, err)
}

func (r keysRaw) Remove(name string) {
	_, err := r.cli.Delete(r.t.Context(), r.prefix+name)
	require.NoError(r.t, err)
}

// expire revokes the etcd lease of l: the lock key's, when l's token is
// its create revision, and the one the issued key names for l's token
// (the lock key put back, or missing).
func expire(t *testing.T, cli *clientv3.Client, p string, l state.Lease) {
	ctx := t.Context()
	resp, err := cli.Get(ctx, p+"lock")
	require.NoError(t, err)
	if len(resp.Kvs) > 0 && resp.Kvs[0].CreateRevision == int64(l.Token) {
		_, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
		require.NoError(t, err)
	}
	resp, err = cli.Get(ctx, p+"issued")
	require.NoError(t, err)
	if len(resp.Kvs) == 0 {
		return
	}
	var rec struct {
		Token uint64 `json:"token"`
		Lease int64  `json:"lease"`
	}
	require.NoError(t, json.Unmarshal(resp.Kvs[0].Value, &rec))
	if rec.Token == 0 {
		rec.Token = uint64(resp.Kvs[0].ModRevision)
	}
	if rec.Token == l.Token && rec.Lease != 0 {
		_, err := cli.Revoke(ctx, clientv3.LeaseID(rec.Lease))
		if err != nil && !strings.Contains(err.Error(), "lease not found") {
			require.NoError(t, err)
		}
	}
}

// TestWrappedCheckpointerLinear: state.Checkpointer wrapped in a plain
// runner.CheckpointFunc commits what changed on etcd too (see
// statetest.WrappedCheckpointer). Before, every round saved the whole
// status: 1,000 components grew the database from 2 to 211 MiB.
func TestWrappedCheckpointerLinear(t *testing.T) {
	cli := client(t)
	statetest.WrappedCheckpointer(t,
		func(*testing.T) statetest.Backend { return etcdstore.New(cli, prefix()) },
		func(b statetest.Backend) int64 { return etcdstore.Written(b.(*etcdstore.Store)) })
}
