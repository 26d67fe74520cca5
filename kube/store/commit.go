package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state/codec"
)

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
