package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/statetest"
)

var (
	cfg        *rest.Config
	skipReason string
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		skipReason = `no API server: set KUBEBUILDER_ASSETS to a directory with kube-apiserver and etcd (eval "$(tools/env.sh kube)")`
		os.Exit(m.Run())
	}
	env := &envtest.Environment{}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

func needAPIServer(t *testing.T) {
	t.Helper()
	if skipReason == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(skipReason)
	}
	t.Skip(skipReason)
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

// newStore is store.New's store, which must be one.
func newStore(tb testing.TB, c client.Client, namespace, name string) *store.Store {
	tb.Helper()
	s, err := store.New(c, namespace, name)
	require.NoError(tb, err, "store.New(%q, %q)", namespace, name)
	return s
}

var n atomic.Int64

// TestConformance runs the state backends' suite against the API server.
func TestConformance(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(context.Background(), ns))
	statetest.Run(t, func(t *testing.T) statetest.Env {
		name := fmt.Sprintf("run-%d", n.Add(1))
		return statetest.Env{
			Open: func() statetest.Backend { return newStore(t, newClient(t), ns.Name, name) },
			Expire: func(l state.Lease) {
				var lease coordinationv1.Lease
				require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns.Name, Name: name}, &lease))
				past := metav1.NewMicroTime(time.Now().Add(-time.Hour))
				lease.Spec.RenewTime = &past
				require.NoError(t, c.Update(context.Background(), &lease))
			},
			Raw: raw{t: t, c: c, namespace: ns.Name, name: name},
		}
	})
}

// raw is a Store's objects as the suite's records, named as the store's
// errors name them: "ConfigMap NS/NAME" (the head), "ConfigMap
// NS/NAME-G-X-I" (the snapshot's chunks), "ConfigMap NS/NAME-G-X-jSEQ-ID"
// (the journal's records), "Lease NS/NAME". A record's bytes are what the
// store parses in the object, the part the suite damages (the middle of
// the first line) first:
//
//   - a chunk or a journal record: its binaryData.status, one framed
//     record line;
//   - the head: its annotations hopdag.io/fence, generation, id, chunks,
//     journal and lease-seconds, one value a line;
//   - the Lease: its annotation hopdag.io/token, then a line of its spec
//     as JSON.
//
// Write puts the bytes back in the object, creating it if need be.
type raw struct {
	t               *testing.T
	c               client.Client
	namespace, name string
}

var headAnnotations = []string{"hopdag.io/fence", "hopdag.io/generation", "hopdag.io/id", "hopdag.io/chunks", "hopdag.io/journal", "hopdag.io/lease-seconds"}

func (r raw) Names() []string {
	ctx := context.Background()
	var cms corev1.ConfigMapList
	require.NoError(r.t, r.c.List(ctx, &cms, client.InNamespace(r.namespace), client.MatchingLabels{"hopdag.io/store": r.name}))
	var names []string
	for _, cm := range cms.Items {
		names = append(names, "ConfigMap "+r.namespace+"/"+cm.Name)
	}
	if r.Read("Lease "+r.namespace+"/"+r.name) != nil {
		names = append(names, "Lease "+r.namespace+"/"+r.name)
	}
	slices.Sort(names)
	return names
}

// object parses a record's name.
func (r raw) object(name string) (kind string, key client.ObjectKey) {
	kind, rest, _ := strings.Cut(name, " ")
	ns, n, _ := strings.Cut(rest, "/")
	require.Equal(r.t, r.namespace, ns, "record %s", name)
	return kind, client.ObjectKey{Namespace: ns, Name: n}
}

func (r raw) Read(name string) []byte {
	ctx := context.Background()
	kind, key := r.object(name)
	if kind == "Lease" {
		var l coordinationv1.Lease
		if err := r.c.Get(ctx, key, &l); apierrors.IsNotFound(err) {
			return nil
		} else {
			require.NoError(r.t, err)
		}
		spec, err := json.Marshal(l.Spec)
		require.NoError(r.t, err)
		return append([]byte(l.Annotations["hopdag.io/token"]+"\n"), spec...)
	}
	var cm corev1.ConfigMap
	if err := r.c.Get(ctx, key, &cm); apierrors.IsNotFound(err) {
		return nil
	} else {
		require.NoError(r.t, err)
	}
	if key.Name != r.name {
		return slices.Clone(cm.BinaryData["status"])
	}
	var b []byte
	for _, ann := range headAnnotations {
		b = append(b, cm.Annotations[ann]+"\n"...)
	}
	return b
}

func (r raw) Write(name string, data []byte) {
	ctx := context.Background()
	kind, key := r.object(name)
	meta := metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
	if kind == "Lease" {
		token, spec, ok := bytes.Cut(data, []byte("\n"))
		require.True(r.t, ok, "Lease record %q", data)
		l := &coordinationv1.Lease{}
		err := r.c.Get(ctx, key, l)
		if apierrors.IsNotFound(err) {
			l.ObjectMeta = meta
		} else {
			require.NoError(r.t, err)
		}
		l.Spec = coordinationv1.LeaseSpec{}
		require.NoError(r.t, json.Unmarshal(spec, &l.Spec))
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations["hopdag.io/token"] = string(token)
		if l.ResourceVersion == "" {
			require.NoError(r.t, r.c.Create(ctx, l))
		} else {
			require.NoError(r.t, r.c.Update(ctx, l))
		}
		return
	}
	cm := &corev1.ConfigMap{}
	err := r.c.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		cm.ObjectMeta = meta
		cm.Labels = map[string]string{"hopdag.io/store": r.name}
	} else {
		require.NoError(r.t, err)
	}
	if key.Name != r.name {
		cm.BinaryData = map[string][]byte{"status": slices.Clone(data)}
	} else {
		lines := strings.Split(string(data), "\n")
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		for i, ann := range headAnnotations {
			if i < len(lines) && lines[i] != "" {
				cm.Annotations[ann] = lines[i]
			} else {
				delete(cm.Annotations, ann)
			}
		}
	}
	if cm.ResourceVersion == "" {
		require.NoError(r.t, r.c.Create(ctx, cm))
	} else {
		require.NoError(r.t, r.c.Update(ctx, cm))
	}
}

func (r raw) Remove(name string) {
	kind, key := r.object(name)
	meta := metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}
	var o client.Object = &corev1.ConfigMap{ObjectMeta: meta}
	if kind == "Lease" {
		o = &coordinationv1.Lease{ObjectMeta: meta}
	}
	require.NoError(r.t, client.IgnoreNotFound(r.c.Delete(context.Background(), o)))
}

// TestLargeStatusIsChunked saves the status of a 10,000-component run:
// every object stays under 1 MiB, and it loads back whole.
func TestLargeStatusIsChunked(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(ctx, ns))
	s := newStore(t, c, ns.Name, "big")
	l, err := s.Acquire(ctx, "test", time.Minute)
	require.NoError(t, err)
	st := &record.Status{Phase: record.Running, From: "v1", To: "v2", Hops: []record.HopStatus{{From: "v1", To: "v2", Phase: record.Running}}}
	for i := range 10000 {
		st.Hops[0].Components = append(st.Hops[0].Components, record.ComponentStatus{
			Name: fmt.Sprintf("component-%05d", i), ToVersion: "v2.0.0", Phase: record.Succeeded, Attempts: 1,
			Error: "an error message of some length, as runners write them, repeated for size",
		})
	}
	require.NoError(t, s.Save(ctx, l.Token, st))
	require.NoError(t, s.Save(ctx, l.Token, st), "a second save replaces the first generation")
	got, err := s.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, st, got)
	var cms corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &cms, client.InNamespace(ns.Name), client.MatchingLabels{"hopdag.io/store": "big"}))
	largest := 0
	for _, cm := range cms.Items {
		b, err := json.Marshal(cm)
		require.NoError(t, err)
		largest = max(largest, len(b))
	}
	data, _ := json.Marshal(st)
	t.Logf("10,000-component status: %d bytes of JSON in %d objects (head included), the largest %d bytes", len(data), len(cms.Items), largest)
	assert.Greater(t, len(cms.Items), 2, "the status is split")
	assert.Less(t, largest, 1<<20, "every object stays under 1 MiB")
}

// TestTokenSurvivesLeaseDeletion: deleting the Lease does not reset the
// fencing token.
func TestTokenSurvivesLeaseDeletion(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(ctx, ns))
	s := newStore(t, c, ns.Name, "run")
	l1, err := s.Acquire(ctx, "a", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Save(ctx, l1.Token, &record.Status{Phase: record.Running}))
	require.NoError(t, c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "run"}}))
	_, err = s.Acquire(ctx, "b", time.Minute)
	require.ErrorIs(t, err, state.ErrLocked, "Acquire with the Lease deleted: taken as held for a TTL (TestLeaseDeleted)")
	// The lease taken as held runs out.
	var lease coordinationv1.Lease
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "run"}, &lease))
	past := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	lease.Spec.RenewTime = &past
	require.NoError(t, c.Update(ctx, &lease))
	l2, err := s.Acquire(ctx, "b", time.Minute)
	require.NoError(t, err)
	assert.Greater(t, l2.Token, l1.Token, "the token after the Lease was deleted is higher")
	err = s.Save(ctx, l1.Token, &record.Status{Phase: record.Failed})
	require.ErrorIs(t, err, state.ErrFenced, "the old holder is fenced")
	got, err := s.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, record.Running, got.Phase)
}

// TestDamagedAnnotation: an annotation of the store's that does not parse
// is a *state.CorruptError naming it at its first bad byte, not a 0 that
// would let a stale token be current again; nothing writes over it.
func TestDamagedAnnotation(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(ctx, ns))
	for i, tc := range []struct {
		kind, ann, value string
		offset           int64
	}{
		{"ConfigMap", "hopdag.io/fence", "1x", 1},
		{"ConfigMap", "hopdag.io/lease-seconds", "6o", 1},
		{"ConfigMap", "hopdag.io/generation", "", 0},
		{"ConfigMap", "hopdag.io/chunks", "-1", 0},
		{"ConfigMap", "hopdag.io/id", "0123456Z", 7},
		{"ConfigMap", "hopdag.io/journal", "7-xyz", 2},
		{"Lease", "hopdag.io/token", "12\x003", 2},
	} {
		t.Run(tc.kind+" "+tc.ann, func(t *testing.T) {
			name := fmt.Sprintf("damaged-%d", i)
			s := newStore(t, c, ns.Name, name)
			l, err := s.Acquire(ctx, "a", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.Save(ctx, l.Token, &record.Status{Phase: record.Running}))
			var o client.Object = &corev1.ConfigMap{}
			if tc.kind == "Lease" {
				o = &coordinationv1.Lease{}
			}
			key := client.ObjectKey{Namespace: ns.Name, Name: name}
			require.NoError(t, c.Get(ctx, key, o))
			anns := o.GetAnnotations()
			anns[tc.ann] = tc.value
			o.SetAnnotations(anns)
			require.NoError(t, c.Update(ctx, o))
			rv := o.GetResourceVersion()

			err = s.Save(ctx, l.Token, &record.Status{Phase: record.Failed})
			var ce *state.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.kind+" "+ns.Name+"/"+name+" annotation "+tc.ann, ce.Path)
			assert.Equal(t, tc.offset, ce.Offset)
			_, err = s.Refresh(ctx, l)
			if tc.kind == "Lease" {
				require.ErrorIs(t, err, state.ErrCorrupt, "Refresh")
			}
			require.NoError(t, c.Get(ctx, key, o))
			assert.Equal(t, rv, o.GetResourceVersion(), "nothing wrote over the damaged %s", tc.kind)
		})
	}
}

// storeObjects lists the store's ConfigMaps (the head among them) by name.
func storeObjects(t *testing.T, c client.Client, ns, name string) map[string]corev1.ConfigMap {
	t.Helper()
	var cms corev1.ConfigMapList
	require.NoError(t, c.List(context.Background(), &cms, client.InNamespace(ns), client.MatchingLabels{"hopdag.io/store": name}))
	out := map[string]corev1.ConfigMap{}
	for _, cm := range cms.Items {
		out[cm.Name] = cm
	}
	return out
}

// TestCommitAppendsOneRecord: a commit of 64 transitions on the status of
// a 10,000-component run writes one small ConfigMap (the journal record)
// and moves the head; it does not rewrite the status. A new handle loads
// the snapshot with the record replayed.
func TestCommitAppendsOneRecord(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(ctx, ns))
	s := newStore(t, c, ns.Name, "big")
	l, err := s.Acquire(ctx, "test", time.Minute)
	require.NoError(t, err)
	st := statetest.Big(10000)
	require.NoError(t, s.Commit(ctx, l.Token, st, nil))
	before := storeObjects(t, c, ns.Name, "big")
	written := store.Written(s)

	var changed []record.Ref
	for i := range 64 {
		st.Hops[0].Components[i].Phase = record.Succeeded
		st.Hops[0].Components[i].Attempts = 1
		changed = append(changed, record.Ref{Hop: 0, Component: i})
	}
	require.NoError(t, s.Commit(ctx, l.Token, st, changed))
	after := storeObjects(t, c, ns.Name, "big")
	var added []string
	for name := range after {
		if _, ok := before[name]; !ok {
			added = append(added, name)
		}
	}
	require.Len(t, added, 1, "one new object: the journal record")
	record := after[added[0]].BinaryData["status"]
	t.Logf("commit of 64 of 10,000 components: one record of %d bytes; the snapshot is %d bytes in %d chunks", len(record), written, len(before)-1)
	assert.Less(t, len(record), 64*300, "the record holds the 64 changed components, not the status")
	assert.Equal(t, int64(len(record)), store.Written(s)-written, "the commit wrote the record and nothing else")
	for name, cm := range before {
		if name != "big" {
			assert.Equal(t, cm.ResourceVersion, after[name].ResourceVersion, "the commit rewrote %s", name)
		}
	}
	got, err := newStore(t, newClient(t), ns.Name, "big").Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, st, got)
}

// TestJournalStaysBounded: a long run of commits on one status makes a
// snapshot whenever the journal outgrows it, removing the records it
// includes, so the number of objects stays bounded; each load equals the
// status committed.
func TestJournalStaysBounded(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(ctx, ns))
	s := newStore(t, c, ns.Name, "run")
	l, err := s.Acquire(ctx, "test", time.Minute)
	require.NoError(t, err)
	st := statetest.Big(200)
	require.NoError(t, s.Commit(ctx, l.Token, st, nil))
	most, snapshots := 0, 0
	prevGen := ""
	for round := range 150 {
		var changed []record.Ref
		for i := range 64 {
			k := (round*64 + i) % 200
			st.Hops[0].Components[k].Attempts++
			st.Hops[0].Components[k].Error = strings.Repeat("x", 200)
			changed = append(changed, record.Ref{Hop: 0, Component: k})
		}
		require.NoError(t, s.Commit(ctx, l.Token, st, changed), "round %d", round)
		objs := storeObjects(t, c, ns.Name, "run")
		most = max(most, len(objs))
		if gen := objs["run"].Annotations["hopdag.io/generation"]; gen != prevGen {
			snapshots++
			prevGen = gen
		}
	}
	got, err := newStore(t, newClient(t), ns.Name, "run").Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, st, got)
	t.Logf("150 commits of 64 components on a 200-component status: %d snapshots, at most %d objects", snapshots-1, most)
	assert.Greater(t, snapshots-1, 1, "the journal was folded into a snapshot")
	assert.Less(t, most, 100, "records included in a snapshot are removed")
}

// TestOrphanRecordIsIgnored: a journal record that no head names (a
// commit whose head update lost to an Acquire, by a holder then fenced)
// is never replayed, and the next snapshot removes it.
func TestOrphanRecordIsIgnored(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-"}}
	require.NoError(t, c.Create(ctx, ns))
	s := newStore(t, c, ns.Name, "run")
	l, err := s.Acquire(ctx, "test", time.Minute)
	require.NoError(t, err)
	st := statetest.Big(20)
	require.NoError(t, s.Commit(ctx, l.Token, st, nil))
	st.Hops[0].Components[0].Phase = record.Succeeded
	require.NoError(t, s.Commit(ctx, l.Token, st, []record.Ref{{Hop: 0, Component: 0}}))
	want := st.DeepCopy()

	// The orphan: the next record's name and a copy of the last record,
	// as a stale writer would have left it.
	objs := storeObjects(t, c, ns.Name, "run")
	last := objs["run"].Annotations["hopdag.io/journal"]
	require.NotEmpty(t, last)
	var rec corev1.ConfigMap
	for name, cm := range objs {
		if strings.HasSuffix(name, "-j"+last) {
			rec = cm
		}
	}
	require.NotEmpty(t, rec.Name)
	orphan := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: strings.TrimSuffix(rec.Name, last) + "3-00c0ffee",
			Labels: rec.Labels, Annotations: map[string]string{"hopdag.io/prev": last}},
		BinaryData: map[string][]byte{"status": []byte("00000000 {\"kind\":\"commit\"}\n")},
	}
	require.NoError(t, c.Create(ctx, orphan))
	got, err := newStore(t, newClient(t), ns.Name, "run").Load(ctx)
	require.NoError(t, err, "an orphan record is not read")
	assert.Equal(t, want, got)

	require.NoError(t, s.Save(ctx, l.Token, st))
	_, ok := storeObjects(t, c, ns.Name, "run")[orphan.Name]
	assert.False(t, ok, "the snapshot removed the orphan")
}

// BenchmarkDurableRun is statetest.BenchDurableRun on the API server (see
// the state package's): overhead-us/component and bytes/transition.
//
//	go test -run '^$' -bench DurableRun -benchtime 1x ./store
func BenchmarkDurableRun(b *testing.B) {
	if skipReason != "" {
		if os.Getenv("CI") == "true" {
			b.Fatal(skipReason)
		}
		b.Skip(skipReason)
	}
	cfg := rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	s := runtime.NewScheme()
	require.NoError(b, clientgoscheme.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(b, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	require.NoError(b, c.Create(context.Background(), ns))
	statetest.BenchDurableRun(b, statetest.DurableRun{
		Open:    func(b *testing.B) statetest.Backend { return newStore(b, c, ns.Name, fmt.Sprintf("run-%d", n.Add(1))) },
		Written: func(be statetest.Backend) int64 { return store.Written(be.(*store.Store)) },
	})
}
