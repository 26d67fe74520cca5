package store

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
