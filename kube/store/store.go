package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/state"
)

// ChunkSize is the largest status chunk one ConfigMap holds.
const ChunkSize = 256 << 10

const (
	annToken      = "hopdag.io/token"
	annFence      = "hopdag.io/fence"
	annGeneration = "hopdag.io/generation"
	annChunks     = "hopdag.io/chunks"
	annSum        = "hopdag.io/sha256"
	annID         = "hopdag.io/id"
	labelStore    = "hopdag.io/store"
)

// Store is a state.Store and state.Lock in one namespace of an API server.
// It is safe for concurrent use, and any number of Stores in any number of
// processes may share a name.
type Store struct {
	c         client.Client
	namespace string
	name      string
	now       func() time.Time
}

// New returns the store NS/name. c needs get, create, update and delete on
// ConfigMaps and Leases of the namespace; it must not read through a cache
// (use client.New, not the manager's client). A Save costs about five
// requests: raise the rest.Config's QPS above client-go's default of 5 a
// second, or checkpoints will wait on the client's rate limiter.
func New(c client.Client, namespace, name string) *Store {
	return &Store{c: c, namespace: namespace, name: name, now: time.Now}
}

func (s *Store) key() client.ObjectKey { return client.ObjectKey{Namespace: s.namespace, Name: s.name} }

func errorf(format string, args ...any) error { return fmt.Errorf("store: "+format, args...) }

// Load reads the status the head points to; nil and no error when none
// was saved.
func (s *Store) Load(ctx context.Context) (*runner.Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		head, err := s.head(ctx)
		if err != nil || head == nil {
			return nil, err
		}
		gen, n, id := num(head, annGeneration), num(head, annChunks), head.Annotations[annID]
		if gen == 0 {
			return nil, nil
		}
		var data []byte
		missing := false
		for i := range n {
			var cm corev1.ConfigMap
			if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: chunkName(s.name, gen, id, i)}, &cm); err != nil {
				if apierrors.IsNotFound(err) {
					missing = true
					break
				}
				return nil, errorf("load %s/%s: %w", s.namespace, s.name, err)
			}
			data = append(data, cm.BinaryData["status"]...)
		}
		if missing { // a Save moved the head and removed this generation: follow it
			if attempt < 3 {
				continue
			}
			return nil, &state.CorruptError{Path: "ConfigMap " + s.namespace + "/" + s.name, Err: fmt.Errorf("generation %d lacks chunks", gen)}
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != head.Annotations[annSum] {
			return nil, &state.CorruptError{Path: "ConfigMap " + s.namespace + "/" + s.name, Err: errors.New("checksum mismatch")}
		}
		var st runner.Status
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, &state.CorruptError{Path: "ConfigMap " + s.namespace + "/" + s.name, Err: err}
		}
		return &st, nil
	}
}

// Commit implements state.Store's Commit by saving the whole status: this
// store does not keep the journal of the File and etcd stores yet, so a
// commit costs what a Save does (the status's size in chunks of at most
// ChunkSize, whatever changed) and changed is not used. Every object still
// stays under ChunkSize, whatever the run's size.
func (s *Store) Commit(ctx context.Context, token uint64, st *runner.Status, _ []runner.Ref) error {
	return s.Save(ctx, token, st)
}

// Save writes st as a new generation and moves the head to it, if token
// is the current lease's (see the package documentation).
func (s *Store) Save(ctx context.Context, token uint64, st *runner.Status) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if st == nil {
		return errorf("save: nil status")
	}
	data, err := json.Marshal(st)
	if err != nil {
		return errorf("save: %w", err)
	}
	// Saves under one token may run concurrently: a conflict on the head
	// whose fence is still the token is another Save of the same holder,
	// and this one tries again on top of it.
	for attempt := 0; ; attempt++ {
		done, err := s.save(ctx, token, data)
		if done || err != nil {
			return err
		}
		if attempt == 50 {
			return errorf("save %s/%s: the head kept changing under 50 attempts", s.namespace, s.name)
		}
	}
}

// save makes one attempt; false and no error means: the head changed under
// the same token, try again.
func (s *Store) save(ctx context.Context, token uint64, data []byte) (bool, error) {
	head, err := s.head(ctx)
	if err != nil {
		return false, err
	}
	if err := s.checkToken(ctx, head, token); err != nil {
		return false, err
	}
	oldGen, oldN, oldID := num(head, annGeneration), num(head, annChunks), head.Annotations[annID]
	gen, id := oldGen+1, nonce()
	n := uint64(0)
	for off := 0; off < len(data) || n == 0; off += ChunkSize {
		end := min(off+ChunkSize, len(data))
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: chunkName(s.name, gen, id, n), Labels: map[string]string{labelStore: s.name}},
			BinaryData: map[string][]byte{"status": data[off:end]},
		}
		if err := s.c.Create(ctx, cm); err != nil {
			s.deleteChunks(ctx, gen, id, n)
			return false, errorf("save %s/%s: chunk %d: %w", s.namespace, s.name, n, err)
		}
		n++
	}
	sum := sha256.Sum256(data)
	head.Annotations[annGeneration] = strconv.FormatUint(gen, 10)
	head.Annotations[annID] = id
	head.Annotations[annChunks] = strconv.FormatUint(n, 10)
	head.Annotations[annSum] = hex.EncodeToString(sum[:])
	// Conditioned on the resourceVersion read above: an Acquire since then
	// raised the fence, and this write conflicts.
	if err := s.c.Update(ctx, head); err != nil {
		s.deleteChunks(ctx, gen, id, n)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return false, errorf("save %s/%s: %w", s.namespace, s.name, err)
	}
	s.deleteChunks(ctx, oldGen, oldID, oldN)
	return true, nil
}

// nonce makes the chunk names of one Save attempt its own.
func nonce() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Store) deleteChunks(ctx context.Context, gen uint64, id string, n uint64) {
	if gen == 0 {
		return
	}
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: chunkName(s.name, gen, id, i)}}
		_ = s.c.Delete(context.WithoutCancel(ctx), cm) // an orphan is harmless: the head never names it
	}
}

// checkToken refuses token unless it is the head's fence and the Lease
// holds it unexpired.
func (s *Store) checkToken(ctx context.Context, head *corev1.ConfigMap, token uint64) error {
	if head == nil || num(head, annFence) != token || token == 0 {
		return s.fenced(ctx, token)
	}
	l, err := s.lease(ctx)
	if err != nil {
		return err
	}
	if l == nil || !s.held(l) || num(&l.ObjectMeta, annToken) != token {
		return s.fenced(ctx, token)
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
	return fe
}

// head reads the head ConfigMap, nil when there is none.
func (s *Store) head(ctx context.Context) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, s.key(), &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, errorf("reading %s/%s: %w", s.namespace, s.name, err)
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	return &cm, nil
}

func (s *Store) lease(ctx context.Context) (*coordinationv1.Lease, error) {
	var l coordinationv1.Lease
	if err := s.c.Get(ctx, s.key(), &l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, errorf("reading Lease %s/%s: %w", s.namespace, s.name, err)
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

func chunkName(name string, gen uint64, id string, i uint64) string {
	return fmt.Sprintf("%s-%d-%s-%d", name, gen, id, i)
}
