package fleet

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// expectTimeout is how long a reconcile waits for the cache to show the
// patches of the one before: past it, the expectations are dropped (and
// the controller logs it) and the decision is taken on the cache as it
// is, for an annotation changed by someone else meanwhile would otherwise
// be waited for forever. The ReplicaSet controller's expectations expire
// after the same five minutes; a cache that lags that much has bigger
// problems than a rollout.
const expectTimeout = 5 * time.Minute

// expectations are the starts and rollback requests this process made
// that its cache may not show yet: by rollout, the ClusterVersions it
// patched and the annotation it wrote on each (Started, RollbackBy). The
// decisions read the ClusterVersions from the cache (a fleet of
// thousands read past it at every reconcile costs the API server and the
// controller more than the upgrades do), and the cache lags the
// controller's own writes: a decision taken on a cache that does not
// show a start would count one upgrade fewer in flight and could exceed
// maxConcurrency (a rollback request too). So a reconcile waits until
// the cache shows every patch of the one before (as the ReplicaSet
// controller's expectations do), for expectTimeout at most. A new
// process has none, and its cache is filled by a List: it decides from
// what the API server has.
type expectations struct {
	mu  sync.Mutex
	m   map[types.NamespacedName]map[string]annotation
	at  map[types.NamespacedName]time.Time // of the last expect, by rollout
	now func() time.Time                   // time.Now unless a test sets it
}

// annotation is one annotation written: its key and value.
type annotation struct{ key, value string }

// expect records that the ClusterVersions of written (name to value)
// were patched for rollout ur with annotation key set to that value.
func (e *expectations) expect(ur types.NamespacedName, key string, written map[string]string) {
	if len(written) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m, e.at = map[types.NamespacedName]map[string]annotation{}, map[types.NamespacedName]time.Time{}
	}
	if e.m[ur] == nil {
		e.m[ur] = map[string]annotation{}
	}
	for name, v := range written {
		e.m[ur][name] = annotation{key, v}
	}
	e.at[ur] = e.clock()
}

// caughtUp reports whether cvs, as the cache has them, show every patch
// recorded for ur (a ClusterVersion gone from the cache counts as
// shown), or the patches were made expectTimeout ago or more (expired
// names the ClusterVersions still not shown then); it forgets them then.
// Each ClusterVersion is named by key (its member key in ur's fleet).
func (e *expectations) caughtUp(ur types.NamespacedName, cvs []v1alpha1.ClusterVersion, key func(*v1alpha1.ClusterVersion) string) (ok bool, expired []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	want := e.m[ur]
	if len(want) == 0 {
		return true, nil
	}
	old := e.clock().Sub(e.at[ur]) >= expectTimeout
	for i := range cvs {
		k := key(&cvs[i])
		if a, ok := want[k]; ok && cvs[i].Annotations[a.key] != a.value {
			if !old {
				return false, nil
			}
			expired = append(expired, k)
		}
	}
	delete(e.m, ur)
	delete(e.at, ur)
	return true, expired
}

// forget drops what was expected for ur (deleted).
func (e *expectations) forget(ur types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, ur)
	delete(e.at, ur)
}

func (e *expectations) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}
