package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
	"github.com/hopdag/hopdag/state/codec"
)

// ChunkSize is the most status bytes one ConfigMap holds: a snapshot
// shard, or a journal record (a commit larger than that is split into
// several, written together).
const ChunkSize = 256 << 10

// minJournal is the journal size (bytes) under which a commit never
// writes a snapshot: with the snapshot's own size as the other bound, the
// journal is replayed in about the time the snapshot takes to read, and
// snapshots cost about as many bytes as the journal.
const minJournal = 1 << 20

const (
	annToken = "hopdag.io/token"
	annFence = "hopdag.io/fence"
	// annLeaseSeconds is the duration of the lease of the fence's token
	// (a lease taken as held when the Lease is missing lasts as long).
	annLeaseSeconds = "hopdag.io/lease-seconds"
	annGeneration   = "hopdag.io/generation"
	annChunks       = "hopdag.io/chunks"
	annID           = "hopdag.io/id"
	annJournal      = "hopdag.io/journal"
	annPrev         = "hopdag.io/prev"
	labelStore      = "hopdag.io/store"
	dataKey         = "status"
)

// annLegacy marks a head written by the first version of this store
// (the whole status as JSON chunks), whose records this one cannot read.
const annLegacy = "hopdag.io/sha256"

// Store is a state.Store and state.Lock in one namespace of an API server.
// It is safe for concurrent use, and any number of Stores in any number of
// processes may share a name.
type Store struct {
	c         client.Client
	namespace string
	name      string
	now       func() time.Time

	mu sync.Mutex
	v  view
	// headUID is the head's UID when this handle last acquired the lock:
	// a head with another is one made again after the head and the Lease
	// were deleted, whose tokens started over, and this handle's token is
	// fenced there even if it is issued again.
	headUID types.UID
	// written counts the status bytes this handle wrote.
	written int64
}

// view is the stored status as a handle last read or wrote it: enough to
// append the next commit without reading anything back.
type view struct {
	fresh bool
	head  *corev1.ConfigMap // with the resourceVersion it was read or written with
	// gen and id name the snapshot's objects, n their number.
	gen uint64
	id  string
	n   uint64
	// seq is the last commit's number; last names its record ("" when
	// no record follows the snapshot).
	seq  uint64
	last string
	// token is the greatest token a record of the status was written
	// under.
	token     uint64
	exists    bool
	counts    int // components of the stored status
	snapBytes int64
	logBytes  int64
	// base is the hops as the last record read or written has them:
	// what the next commit records the changes of.
	base codec.Base
	// versions holds the resourceVersion of each object of the status
	// (snapshot and journal) as read or created: one that changed since
	// was written by someone else, and is read and checked again before
	// anything removes it.
	versions map[string]string
}

// New returns the store NS/name. c needs get, list, create, update and
// delete on ConfigMaps and get, create and update on Leases of the
// namespace; it must not read through a cache (use client.New, not the
// manager's client). A commit costs three requests (read the Lease,
// create the record, move the head); a snapshot four, one per chunk and
// one per object it replaces:
// raise the rest.Config's QPS above client-go's default of 5 a second, or
// checkpoints will wait on the client's rate limiter.
//
// name goes into the label hopdag.io/store of every object of the store
// and names them (N, N-G-X-jSEQ-ID), so it must be both a label value and
// an object name: at most 63 lower-case letters, digits, '-' and '.',
// starting and ending with a letter or digit. New refuses any other
// name, and a namespace that is not a namespace's name: a name derived
// from a user's (a ClusterVersion's) must be hashed when too long, as
// kube/examples/operator does.
func New(c client.Client, namespace, name string) (*Store, error) {
	if errs := append(validation.IsDNS1123Subdomain(name), validation.IsValidLabelValue(name)...); len(errs) > 0 {
		return nil, errorf("name %q cannot name a store (%s): it is the value of the label %s on the store's objects and starts their names; give a shorter name, or a hash of a long one", name, strings.Join(errs, "; "), labelStore)
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, errorf("namespace %q of store %s is not a namespace's name (%s)", namespace, name, strings.Join(errs, "; "))
	}
	return &Store{c: c, namespace: namespace, name: name, now: time.Now}, nil
}

func (s *Store) key() client.ObjectKey { return client.ObjectKey{Namespace: s.namespace, Name: s.name} }

func errorf(format string, args ...any) error { return fmt.Errorf("store: "+format, args...) }

// path names one object of the store, as its errors do.
func (s *Store) path(kind, name string) string { return kind + " " + s.namespace + "/" + name }

// Load reads the snapshot the head names and replays the journal records
// after it, in one consistent List; nil and no error when nothing was
// saved.
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

// errMissing is an object the head's chain names that is not there: the
// store was damaged by hand.
var errMissing = errors.New("an object of the status is missing")

// load reads the store's objects (the head among them) in one List and
// rebuilds the status, and makes the view the one it read.
func (s *Store) load(ctx context.Context) (*codec.State, error) {
	for try := 0; ; try++ {
		st, err := s.loadOnce(ctx)
		if !errors.Is(err, errHeadAppeared) {
			return st, err
		}
		if try == 10 {
			return nil, errorf("load %s: the head keeps appearing between the list of the store's objects and its read; is another writer creating it over and over?", s.path("ConfigMap", s.name))
		}
	}
}

// errHeadAppeared: the head was created between loadOnce's list and its
// read of the head by name; the load starts over.
var errHeadAppeared = errors.New("store: the head appeared during the load")

func (s *Store) loadOnce(ctx context.Context) (*codec.State, error) {
	s.v.fresh = false
	var list corev1.ConfigMapList
	if err := s.c.List(ctx, &list, client.InNamespace(s.namespace), client.MatchingLabels{labelStore: s.name}); err != nil {
		return nil, errorf("load %s: %w", s.path("ConfigMap", s.name), err)
	}
	objs := make(map[string]*corev1.ConfigMap, len(list.Items))
	for i := range list.Items {
		objs[list.Items[i].Name] = &list.Items[i]
	}
	v := view{versions: map[string]string{}}
	st := &codec.State{}
	head := objs[s.name]
	if head == nil {
		// Not among the labelled objects: absent, or its label was taken
		// off (a GitOps prune, an apply of a ConfigMap of that name).
		h, err := s.head(ctx)
		if err != nil {
			return nil, err
		}
		if h != nil && h.Labels[labelStore] == s.name {
			return nil, errHeadAppeared // created since the list: look again
		}
		if h != nil {
			return nil, &state.CorruptError{Path: s.path("ConfigMap", s.name) + " label " + labelStore,
				Err: fmt.Errorf("the head has no label %s=%s, which the store sets on its objects and lists them by: put it back", labelStore, s.name)}
		}
	}
	if head != nil {
		if err := s.checkHead(head); err != nil {
			return nil, err
		}
		v.head = head
		v.gen, v.id, v.n = num(head, annGeneration), head.Annotations[annID], num(head, annChunks)
	}
	if v.gen != 0 {
		if err := s.replay(st, &v, objs); err != nil {
			return nil, err
		}
	}
	v.seq, v.token, v.exists = st.Seq, st.Token, st.Status != nil
	v.base = codec.BaseOf(st.Status)
	if st.Status != nil {
		for _, h := range st.Status.Hops {
			v.counts += len(h.Components)
		}
	}
	v.fresh = true
	s.v = v
	return st, nil
}

// replay applies the snapshot's chunks and the journal's records to st,
// and records their sizes and versions in v.
func (s *Store) replay(st *codec.State, v *view, objs map[string]*corev1.ConfigMap) error {
	read := func(name string, what string) ([]byte, *codec.Record, error) {
		cm := objs[name]
		if cm == nil {
			return nil, nil, &state.CorruptError{Path: s.path("ConfigMap", name), Err: fmt.Errorf("%w: %s, which %s names, is not there", errMissing, what, s.path("ConfigMap", s.name))}
		}
		data := cm.BinaryData[dataKey]
		v.versions[name] = cm.ResourceVersion
		r, err := codec.Unframe(data)
		if err != nil {
			return nil, nil, s.corrupt(name, data, err)
		}
		return data, r, nil
	}
	var snapSeq uint64
	for i := range v.n {
		name := chunkName(s.name, v.gen, v.id, i)
		data, r, err := read(name, fmt.Sprintf("chunk %d of the %d of snapshot generation %d", i, v.n, v.gen))
		if err != nil {
			return err
		}
		switch {
		case i == 0 && r.Kind != codec.KindSnapshot:
			err = fmt.Errorf("the first chunk is a %s record, want a snapshot head", r.Kind)
		case i == 0 && uint64(r.Shards)+1 != v.n:
			err = fmt.Errorf("the snapshot head says %d shards follow, the head ConfigMap's %s says %d chunks in all", r.Shards, annChunks, v.n)
		case i > 0 && (r.Kind != codec.KindShard || uint64(r.Shard) != i-1 || r.Seq != snapSeq):
			err = fmt.Errorf("a %s record of seq %d, want shard %d of seq %d", r.Kind, r.Seq, i-1, snapSeq)
		}
		if err == nil {
			if i == 0 {
				snapSeq = r.Seq
			}
			err = st.Apply(r)
		}
		if err != nil {
			return s.corrupt(name, nil, err)
		}
		v.snapBytes += int64(len(data))
	}
	if v.n == 0 {
		return &state.CorruptError{Path: s.path("ConfigMap", s.name) + " annotation " + annChunks, Err: fmt.Errorf("generation %d has no chunks", v.gen)}
	}
	// The journal: from the head's last record back to the snapshot,
	// each record naming the one before it.
	var chain []string
	for ref, from := v.head.Annotations[annJournal], s.path("ConfigMap", s.name)+" annotation "+annJournal; ref != ""; {
		seq, _ := refSeq(ref)
		if seq <= snapSeq {
			return &state.CorruptError{Path: from, Err: fmt.Errorf("record %q does not follow snapshot %d", ref, snapSeq)}
		}
		name := recordName(s.name, v.gen, v.id, ref)
		cm := objs[name]
		if cm == nil {
			return &state.CorruptError{Path: s.path("ConfigMap", name), Err: fmt.Errorf("%w: journal record %d, which %s names, is not there", errMissing, seq, from)}
		}
		chain = append(chain, name)
		prev := cm.Annotations[annPrev]
		from = s.path("ConfigMap", name) + " annotation " + annPrev
		if err := checkRef(prev, from); err != nil {
			return err
		}
		if p, _ := refSeq(prev); prev != "" && p+1 != seq || prev == "" && seq != snapSeq+1 {
			return &state.CorruptError{Path: from, Err: fmt.Errorf("record %d names %q before it", seq, prev)}
		}
		ref = prev
	}
	for i := len(chain) - 1; i >= 0; i-- {
		name := chain[i]
		data, r, err := read(name, "a journal record")
		if err != nil {
			return err
		}
		if !r.IsCommit() || r.Seq != st.Seq+1 {
			err = fmt.Errorf("a %s record of seq %d, want commit %d", r.Kind, r.Seq, st.Seq+1)
		} else {
			err = st.Apply(r)
		}
		if err != nil {
			return s.corrupt(name, nil, err)
		}
		v.logBytes += int64(len(data))
		v.last = strings.TrimPrefix(name, recordPrefix(s.name, v.gen, v.id))
	}
	if err := st.Check(); err != nil {
		return &state.CorruptError{Path: s.path("ConfigMap", s.name), Err: fmt.Errorf("the status its records add up to is not valid: %w", err)}
	}
	return nil
}

// corrupt is the *state.CorruptError of object name's record: at its
// first byte that no record line holds (a control character before the
// final newline), when data has one.
func (s *Store) corrupt(name string, data []byte, err error) error {
	ce := &state.CorruptError{Path: s.path("ConfigMap", name) + " binaryData." + dataKey, Err: err}
	for i, c := range data {
		if c < 0x20 && c != '\t' && !(c == '\n' && i == len(data)-1) {
			ce.Offset = int64(i)
			ce.Err = fmt.Errorf("byte %#02x cannot appear in a record, and %w", c, err)
			break
		}
	}
	return ce
}

// Save writes st whole, as a new snapshot generation, if token is the
// current lease's (see the package documentation).
func (s *Store) Save(ctx context.Context, token uint64, st *record.Status) error {
	return s.commit(ctx, token, st, nil, true)
}

// Commit writes the changed components of st as one journal record (a
// ConfigMap of at most ChunkSize bytes; a few when the commit is larger),
// or a snapshot when the journal has outgrown the snapshot, when the
// commit changes most of the status or when its components are not the
// stored ones (a new run).
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
	s.mu.Lock()
	defer s.mu.Unlock()
	// Commits under one token may come from several handles: a conflict
	// on the head whose fence is still the token is another handle of
	// the same holder, and this one tries again on top of it.
	for attempt := 0; ; attempt++ {
		// A view whose fence is not the token was taken before another
		// handle acquired it (or the token is stale): read it again
		// before judging the token.
		if !s.v.fresh || s.v.head == nil || num(s.v.head, annFence) != token {
			if _, err := s.load(ctx); err != nil {
				return err
			}
		}
		if err := s.checkToken(ctx, token); err != nil {
			return err
		}
		done, err := s.write(ctx, token, st, changed, all)
		if done || err != nil {
			if err != nil {
				s.v.fresh = false // what is stored is unknown: read it again
			}
			return err
		}
		s.v.fresh = false
		if attempt == 50 {
			return errorf("save %s: the head kept changing under 50 attempts; is another coordinator writing it without the lock?", s.path("ConfigMap", s.name))
		}
		// Handles of one holder racing each other: spread them out.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(1+mrand.IntN(5)) * time.Millisecond):
		}
	}
}

// write appends a commit or writes a snapshot; false and no error means
// the head changed since the view was taken (nothing was written).
func (s *Store) write(ctx context.Context, token uint64, st *record.Status, changed []record.Ref, all bool) (bool, error) {
	total := 0
	for _, h := range st.Hops {
		total += len(h.Components)
	}
	v := &s.v
	if !all && v.exists && total == v.counts && 2*len(changed) <= total && v.logBytes <= max(minJournal, v.snapBytes) {
		return s.append(ctx, token, st, changed)
	}
	return s.snapshot(ctx, token, st, total)
}

// append writes the commit's records, each naming the one before it, and
// then moves the head's journal pointer to the last (conditioned on the
// head's resourceVersion: an Acquire or a snapshot since conflicts).
// Records that no head names are never read; the next snapshot removes
// them.
func (s *Store) append(ctx context.Context, token uint64, st *record.Status, changed []record.Ref) (bool, error) {
	v := &s.v
	lines, next, err := codec.Commits(v.seq+1, token, st, changed, ChunkSize, v.base)
	if err != nil {
		return false, errorf("save: %w", err)
	}
	prev := v.last
	var created []*corev1.ConfigMap
	size := int64(0)
	for i, line := range lines {
		ref := fmt.Sprintf("%d-%s", v.seq+1+uint64(i), nonce())
		cm := s.object(recordName(s.name, v.gen, v.id, ref), line)
		cm.Annotations = map[string]string{annPrev: prev}
		if err := s.c.Create(ctx, cm); err != nil {
			s.remove(ctx, created)
			return false, errorf("save %s: journal record %d: %w", s.path("ConfigMap", s.name), v.seq+1+uint64(i), err)
		}
		created = append(created, cm)
		prev = ref
		size += int64(len(line))
	}
	head := v.head.DeepCopy()
	head.Annotations[annJournal] = prev
	gen, id := v.gen, v.id
	applied := func(h *corev1.ConfigMap) bool {
		return num(h, annGeneration) == gen && h.Annotations[annID] == id && h.Annotations[annJournal] == prev
	}
	if done, err := s.moveHead(ctx, head, created, applied); !done || err != nil {
		return done, err
	}
	for _, cm := range created {
		v.versions[cm.Name] = cm.ResourceVersion
	}
	v.seq += uint64(len(lines))
	v.last, v.token, v.base = prev, token, next
	v.logBytes += size
	s.written += size
	return true, nil
}

// moveHead updates the head, conditioned on the resourceVersion the view
// has. A conflict does not prove that the update was not applied (client-go
// resends a request that got a 5xx with Retry-After, and the resent one
// conflicts with the first): moveHead reads the head, and when applied
// says it names created (their names are this write's own) the write
// landed. Otherwise it removes created, which nothing names, and reports
// false. On another error it leaves them: the update may have been
// applied, and an orphan is harmless.
func (s *Store) moveHead(ctx context.Context, head *corev1.ConfigMap, created []*corev1.ConfigMap, applied func(*corev1.ConfigMap) bool) (bool, error) {
	err := s.c.Update(ctx, head)
	if apierrors.IsConflict(err) {
		now, gerr := s.head(ctx)
		if gerr != nil {
			return false, gerr
		}
		if now != nil && applied(now) {
			head, err = now, nil
		} else {
			s.remove(ctx, created)
			return false, nil
		}
	}
	if err != nil {
		return false, errorf("save %s: %w", s.path("ConfigMap", s.name), err)
	}
	s.v.head = head
	return true, nil
}

// snapshot writes st as a new generation of chunks, moves the head to it,
// and removes every other object of the store: the old generation, its
// journal, and records of failed commits. The old generation must check
// out first: a damaged object is left as it is, for its owner to repair,
// and nothing goes over it.
func (s *Store) snapshot(ctx context.Context, token uint64, st *record.Status, total int) (bool, error) {
	v := &s.v
	old, stale, err := s.others(ctx)
	if err != nil || stale {
		return false, err
	}
	next := v.seq + 1
	lines, err := codec.Snapshot(next, token, st, ChunkSize)
	if err != nil {
		return false, errorf("save: %w", err)
	}
	gen, id := v.gen+1, nonce()
	var created []*corev1.ConfigMap
	size := int64(0)
	for i, line := range lines {
		cm := s.object(chunkName(s.name, gen, id, uint64(i)), line)
		if err := s.c.Create(ctx, cm); err != nil {
			s.remove(ctx, created)
			return false, errorf("save %s: snapshot chunk %d: %w", s.path("ConfigMap", s.name), i, err)
		}
		created = append(created, cm)
		size += int64(len(line))
	}
	head := v.head.DeepCopy()
	head.Annotations[annGeneration] = strconv.FormatUint(gen, 10)
	head.Annotations[annID] = id
	head.Annotations[annChunks] = strconv.Itoa(len(lines))
	delete(head.Annotations, annJournal)
	applied := func(h *corev1.ConfigMap) bool {
		return num(h, annGeneration) == gen && h.Annotations[annID] == id
	}
	if done, err := s.moveHead(ctx, head, created, applied); !done || err != nil {
		return done, err
	}
	s.remove(ctx, old)
	*v = view{fresh: true, head: head, gen: gen, id: id, n: uint64(len(lines)), seq: next, token: token,
		exists: true, counts: total, snapBytes: size, base: codec.BaseOf(st), versions: map[string]string{}}
	for _, cm := range created {
		v.versions[cm.Name] = cm.ResourceVersion
	}
	s.written += size
	return true, nil
}

// others lists the store's objects but the head (one metadata List), to
// be removed once a new snapshot replaced them. The view's objects among
// them must be as the view saw them; stale reports that one changed and
// the view was read again (and checked out): the caller starts over.
func (s *Store) others(ctx context.Context) (objs []*corev1.ConfigMap, stale bool, err error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := s.c.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{labelStore: s.name}); err != nil {
		return nil, false, errorf("save: listing the objects of %s: %w", s.path("ConfigMap", s.name), err)
	}
	seen := map[string]string{}
	for _, m := range list.Items {
		if m.Name == s.name || !s.owns(m.Name) {
			continue // the head, or a copy someone labelled: not the store's to remove
		}
		seen[m.Name] = m.ResourceVersion
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion}})
	}
	for name, rv := range s.v.versions {
		if seen[name] != rv {
			return nil, true, nil // the caller reads the view again, checking it
		}
	}
	return objs, false, nil
}

// owns reports whether name is one the store gives its objects:
// N-G-X-I (a snapshot chunk) or N-G-X-jSEQ-ID (a journal record).
func (s *Store) owns(name string) bool {
	rest, ok := strings.CutPrefix(name, s.name+"-")
	if !ok {
		return false
	}
	parts := strings.SplitN(rest, "-", 3)
	if len(parts) != 3 || !digits(parts[0]) || badHex(parts[1], 8) >= 0 {
		return false
	}
	if ref, ok := strings.CutPrefix(parts[2], "j"); ok {
		seq, id, ok := strings.Cut(ref, "-")
		return ok && digits(seq) && badHex(id, 8) < 0
	}
	return digits(parts[2])
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// object is a ConfigMap of the store holding one record.
func (s *Store) object(name string, record []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: name, Labels: map[string]string{labelStore: s.name}},
		BinaryData: map[string][]byte{dataKey: record},
	}
}

// remove deletes objs, each only if it is still the version listed or
// created (an orphan left behind is harmless: no head names it).
func (s *Store) remove(ctx context.Context, objs []*corev1.ConfigMap) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, cm := range objs {
		pre := metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}
		_ = s.c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}}, &client.DeleteOptions{Preconditions: &pre})
	}
}

// nonce makes the names of one write its own.
func nonce() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

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

// checkNum refuses an annotation ann of o that is there and is not a
// number: it would read as 0, and a fence or token of 0 lets a stale
// holder's token be current again.
func checkNum(o metav1.Object, ann, path string) error {
	v, ok := o.GetAnnotations()[ann]
	if !ok {
		return nil
	}
	if _, err := strconv.ParseUint(v, 10, 64); err == nil {
		return nil
	}
	off := 0
	for off < len(v)-1 && '0' <= v[off] && v[off] <= '9' {
		off++
	}
	return &state.CorruptError{Path: path + " annotation " + ann, Offset: int64(off),
		Err: fmt.Errorf("%q is not a whole number (the store writes them there)", v)}
}

// checkHex refuses an annotation ann of o that is not n lower-case hex
// digits, as the store writes it.
func checkHex(o metav1.Object, ann string, n int, path string) error {
	v := o.GetAnnotations()[ann]
	if off := badHex(v, n); off >= 0 {
		return &state.CorruptError{Path: path + " annotation " + ann, Offset: int64(off), Err: fmt.Errorf("%q is not %d hex digits (the store writes them there)", v, n)}
	}
	return nil
}

// badHex returns the offset of the first byte of v that makes it not n
// lower-case hex digits, or -1.
func badHex(v string, n int) int {
	for i := range len(v) {
		if !('0' <= v[i] && v[i] <= '9' || 'a' <= v[i] && v[i] <= 'f') {
			return i
		}
	}
	if len(v) != n {
		return min(len(v), n)
	}
	return -1
}

// checkRef refuses a journal reference that is not "" or SEQ-ID (a
// commit's number, a dash, 8 hex digits), as the store writes it.
func checkRef(ref, path string) error {
	if ref == "" {
		return nil
	}
	seq, id, ok := strings.Cut(ref, "-")
	off := 0
	for off < len(seq) && '0' <= seq[off] && seq[off] <= '9' {
		off++
	}
	switch {
	case off < len(seq) || off == 0 || !ok:
	case badHex(id, 8) >= 0:
		off = len(seq) + 1 + badHex(id, 8)
	default:
		if _, err := strconv.ParseUint(seq, 10, 64); err == nil {
			return nil
		}
		off = 0
	}
	return &state.CorruptError{Path: path, Offset: int64(off), Err: fmt.Errorf("%q is not a journal record's SEQ-ID (the store writes them there)", ref)}
}

// refSeq is the commit number of a journal reference checkRef accepted.
func refSeq(ref string) (uint64, bool) {
	seq, _, _ := strings.Cut(ref, "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
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

func num(o metav1.Object, ann string) uint64 {
	n, _ := strconv.ParseUint(o.GetAnnotations()[ann], 10, 64)
	return n
}

// chunkName names chunk i of snapshot generation gen (write id).
func chunkName(name string, gen uint64, id string, i uint64) string {
	return fmt.Sprintf("%s-%d-%s-%d", name, gen, id, i)
}

func recordPrefix(name string, gen uint64, id string) string {
	return fmt.Sprintf("%s-%d-%s-j", name, gen, id)
}

// recordName names the journal record ref (SEQ-ID) after snapshot
// generation gen.
func recordName(name string, gen uint64, id, ref string) string {
	return recordPrefix(name, gen, id) + ref
}
