package catalog

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/release"
)

// Cache keeps, per namespace, the catalog last built from its objects, and
// builds it again only when they changed: an object added, removed, or
// written (its UID or resourceVersion moved). Listing goes through the
// reader every time (from an informer cache it costs no API call); only the
// strict load, which on a catalog of thousands of objects takes seconds, is
// saved. A reconciler that loads the catalog on every reconcile and an
// admission webhook that must answer within its timeout share one Cache.
//
// The catalogs a Cache returns are shared: callers must not modify them.
// The manifests file system of WithManifests must not change while the
// Cache is in use (an embedded FS, a read-only directory), since a change
// there is not seen. A Cache is safe for concurrent use.
type Cache struct {
	opts []Option
	mu   sync.Mutex
	last map[string]cached
}

type cached struct {
	key [sha256.Size]byte
	cat *release.Catalog
	err error
}

// NewCache returns an empty Cache that builds catalogs with opts.
func NewCache(opts ...Option) *Cache {
	return &Cache{opts: opts, last: map[string]cached{}}
}

// Load lists the catalog objects of namespace through c and returns the
// catalog they declare (see Load), built again only when they changed. An
// invalid catalog's error is kept as its catalog would be.
func (c *Cache) Load(ctx context.Context, r client.Reader, namespace string) (*release.Catalog, error) {
	// Not copied from an informer cache: the objects are only read (their
	// identities, and their specs marshalled into the documents the
	// catalog is built from), and a reconcile of every ClusterVersion
	// loads them.
	objs, err := list(ctx, r, namespace, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	key, ok := objs.fingerprint()
	if !ok {
		return objs.Catalog(c.opts...)
	}
	c.mu.Lock()
	e, hit := c.last[namespace]
	c.mu.Unlock()
	if hit && e.key == key {
		return e.cat, e.err
	}
	cat, err := objs.Catalog(c.opts...)
	c.mu.Lock()
	c.last[namespace] = cached{key: key, cat: cat, err: err}
	c.mu.Unlock()
	return cat, err
}

// fingerprint identifies the objects' versions: the sorted kind, name,
// UID and resourceVersion of each. ok is false when an object has no
// resourceVersion (it was not read from an API server): nothing then says
// whether it changed.
func (o *Objects) fingerprint() (key [sha256.Size]byte, ok bool) {
	ids := make([]string, 0, len(o.Releases)+len(o.Components)+len(o.UpgradePaths))
	for i := range o.Releases {
		m := &o.Releases[i].ObjectMeta
		ids = append(ids, fmt.Sprintf("R/%s/%s/%s", m.Name, m.UID, m.ResourceVersion))
	}
	for i := range o.Components {
		m := &o.Components[i].ObjectMeta
		ids = append(ids, fmt.Sprintf("C/%s/%s/%s", m.Name, m.UID, m.ResourceVersion))
	}
	for i := range o.UpgradePaths {
		m := &o.UpgradePaths[i].ObjectMeta
		ids = append(ids, fmt.Sprintf("P/%s/%s/%s", m.Name, m.UID, m.ResourceVersion))
	}
	for _, id := range ids {
		if strings.HasSuffix(id, "/") {
			return key, false
		}
	}
	slices.Sort(ids)
	return sha256.Sum256([]byte(strings.Join(ids, "\n"))), true
}
