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
	"strings"
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
	annVersions   = "hopdag.io/chunk-versions"
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
// ConfigMaps and Leases of the namespace, and list on its ConfigMaps; it
// must not read through a cache (use client.New, not the manager's
// client). A Save costs about six requests and two per chunk: raise the
// rest.Config's QPS above client-go's default of 5 a second, or
// checkpoints will wait on the client's rate limiter.
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
		data, err := s.status(ctx, head)
		if errors.Is(err, errMoved) && attempt < 3 {
			continue // a Save moved the head and removed this generation: follow it
		}
		if err != nil || data == nil {
			return nil, err
		}
		var st runner.Status
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, &state.CorruptError{Path: s.path("ConfigMap", s.name) + " (the status of generation " + head.Annotations[annGeneration] + ")", Err: err}
		}
		return &st, nil
	}
}

// errMoved is a chunk of the head's generation that is not there: a Save
// may have moved the head on and removed it.
var errMoved = errors.New("store: a chunk of the generation is missing")

// status reads and checks the chunks of the generation head names: nil
// when it names none. A chunk that is not there is errMoved wrapped in
// a *state.CorruptError naming it; a chunk whose bytes do not check out
// is a *state.CorruptError naming it, at the first bad byte when the
// JSON shows one.
func (s *Store) status(ctx context.Context, head *corev1.ConfigMap) ([]byte, error) {
	gen, n, id := num(head, annGeneration), num(head, annChunks), head.Annotations[annID]
	if gen == 0 {
		return nil, nil
	}
	var data []byte
	chunks := make([][]byte, n)
	for i := range n {
		name := chunkName(s.name, gen, id, i)
		var cm corev1.ConfigMap
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &state.CorruptError{Path: s.path("ConfigMap", name), Err: fmt.Errorf("%w: chunk %d of the %d of generation %d, which the head ConfigMap %s names, is not there", errMoved, i, n, gen, s.path("ConfigMap", s.name))}
			}
			return nil, errorf("load %s: %w", s.path("ConfigMap", name), err)
		}
		chunks[i] = cm.BinaryData["status"]
		if want, ok := cm.Annotations[annSum]; ok && want != sumOf(chunks[i]) {
			return nil, s.badChunk(name, chunks[i], want)
		}
		data = append(data, chunks[i]...)
	}
	if want := head.Annotations[annSum]; sumOf(data) != want {
		// The chunks check out one by one (or predate their own sums):
		// find the bad byte in the JSON if there is one.
		var se *json.SyntaxError
		if err := json.Unmarshal(data, new(json.RawMessage)); errors.As(err, &se) && se.Offset > 0 {
			off := se.Offset - 1
			for i, c := range chunks {
				if off < int64(len(c)) {
					return nil, &state.CorruptError{Path: s.path("ConfigMap", chunkName(s.name, gen, id, uint64(i))) + " binaryData.status", Offset: off, Err: se}
				}
				off -= int64(len(c))
			}
		}
		return nil, &state.CorruptError{Path: s.path("ConfigMap", s.name) + " annotation " + annSum,
			Err: fmt.Errorf("the %d chunks of generation %d have the checksum %s, not %q", n, gen, sumOf(data), want)}
	}
	return data, nil
}

// badChunk is the error of chunk name whose bytes b do not have the
// checksum want it was written with.
func (s *Store) badChunk(name string, b []byte, want string) error {
	ce := &state.CorruptError{Path: s.path("ConfigMap", name) + " binaryData.status", Err: fmt.Errorf("checksum %s does not match the chunk's %s", sumOf(b), want)}
	// A chunk is a piece of one JSON document: its first byte that no
	// JSON could hold is where the damage is, when there is one.
	for i, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			ce.Offset = int64(i)
			ce.Err = fmt.Errorf("byte %#02x cannot appear in JSON, and %w", c, ce.Err)
			break
		}
	}
	return ce
}

func sumOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// path names one object of the store, as its errors do.
func (s *Store) path(kind, name string) string { return kind + " " + s.namespace + "/" + name }

// Commit implements state.Store's Commit by saving the whole status: this
// store does not keep the journal of the File and etcd stores yet, so a
// commit costs what a Save does (the status's size in chunks of at most
// ChunkSize, whatever changed, and a List of the chunks' metadata) and
// changed is not used. Every object still
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
	// The generation this Save replaces must check out: a damaged chunk
	// is left as it is, for its owner to repair, and nothing goes over it.
	if err := s.checkGeneration(ctx, head); err != nil {
		if errors.Is(err, errMoved) {
			if now, herr := s.head(ctx); herr == nil && now != nil && now.ResourceVersion != head.ResourceVersion {
				return false, nil // another Save of this holder moved the head
			}
		}
		return false, err
	}
	oldGen, oldN, oldID := num(head, annGeneration), num(head, annChunks), head.Annotations[annID]
	gen, id := oldGen+1, nonce()
	n := uint64(0)
	var versions []string
	for off := 0; off < len(data) || n == 0; off += ChunkSize {
		end := min(off+ChunkSize, len(data))
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: chunkName(s.name, gen, id, n), Labels: map[string]string{labelStore: s.name},
				Annotations: map[string]string{annSum: sumOf(data[off:end])}},
			BinaryData: map[string][]byte{"status": data[off:end]},
		}
		if err := s.c.Create(ctx, cm); err != nil {
			s.deleteChunks(ctx, gen, id, n)
			return false, errorf("save %s/%s: chunk %d: %w", s.namespace, s.name, n, err)
		}
		versions = append(versions, cm.ResourceVersion)
		n++
	}
	head.Annotations[annVersions] = strings.Join(versions, ",")
	head.Annotations[annGeneration] = strconv.FormatUint(gen, 10)
	head.Annotations[annID] = id
	head.Annotations[annChunks] = strconv.FormatUint(n, 10)
	head.Annotations[annSum] = sumOf(data)
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

// checkGeneration checks the chunks of the generation head names before
// a Save replaces them. A chunk whose resourceVersion is the one it was
// created with (hopdag.io/chunk-versions) is as the store wrote it, and
// only its metadata is read; any other is read whole and checked.
func (s *Store) checkGeneration(ctx context.Context, head *corev1.ConfigMap) error {
	gen, n, id := num(head, annGeneration), num(head, annChunks), head.Annotations[annID]
	versions := strings.Split(head.Annotations[annVersions], ",")
	if gen == 0 || uint64(len(versions)) != n {
		_, err := s.status(ctx, head)
		return err
	}
	// One request for the metadata of all of the store's chunks.
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := s.c.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{labelStore: s.name}); err != nil {
		return errorf("save: listing the chunks of %s: %w", s.path("ConfigMap", s.name), err)
	}
	rv := map[string]string{}
	for _, m := range list.Items {
		rv[m.Name] = m.ResourceVersion
	}
	for i := range n {
		if rv[chunkName(s.name, gen, id, i)] != versions[i] {
			_, err := s.status(ctx, head)
			return err
		}
	}
	return nil
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
	for _, ann := range []string{annFence, annGeneration, annChunks} {
		if err := checkNum(&cm, ann, s.path("ConfigMap", s.name)); err != nil {
			return nil, err
		}
	}
	if num(&cm, annGeneration) != 0 {
		if err := checkHex(&cm, annID, 8, s.path("ConfigMap", s.name)); err != nil {
			return nil, err
		}
		if err := checkHex(&cm, annSum, 64, s.path("ConfigMap", s.name)); err != nil {
			return nil, err
		}
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
	for i := range len(v) {
		if !('0' <= v[i] && v[i] <= '9' || 'a' <= v[i] && v[i] <= 'f') {
			return &state.CorruptError{Path: path + " annotation " + ann, Offset: int64(i), Err: fmt.Errorf("%q is not %d hex digits (the store writes them there)", v, n)}
		}
	}
	if len(v) != n {
		return &state.CorruptError{Path: path + " annotation " + ann, Offset: int64(min(len(v), n)), Err: fmt.Errorf("%q is not %d hex digits (the store writes them there)", v, n)}
	}
	return nil
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
