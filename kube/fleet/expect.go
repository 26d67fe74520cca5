package fleet

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// expectations are the starts and rollback requests this process made
// that its cache may not show yet: by rollout, the ClusterVersions it
// patched and the annotation it wrote on each (Started, RollbackBy). The decisions read the ClusterVersions
// from the cache (a fleet of thousands read past it at every reconcile
// costs the API server and the controller more than the upgrades do), and
// the cache lags the controller's own writes: a decision taken on a
// cache that does not show a start would count one upgrade fewer in
// flight and could exceed maxConcurrency (a rollback request too). So a
// reconcile waits until the cache shows every patch of the one before (as the ReplicaSet
// controller's expectations do). A new process has none, and its cache
// is filled by a List: it decides from what the API server has.
type expectations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]annotation
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
		e.m = map[types.NamespacedName]map[string]annotation{}
	}
	if e.m[ur] == nil {
		e.m[ur] = map[string]annotation{}
	}
	for name, v := range written {
		e.m[ur][name] = annotation{key, v}
	}
}

// caughtUp reports whether cvs, as the cache has them, show every patch
// recorded for ur (a ClusterVersion gone from the cache counts as
// shown); it forgets them once they do.
func (e *expectations) caughtUp(ur types.NamespacedName, cvs []v1alpha1.ClusterVersion) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	want := e.m[ur]
	if len(want) == 0 {
		return true
	}
	for i := range cvs {
		if a, ok := want[cvs[i].Name]; ok && cvs[i].Annotations[a.key] != a.value {
			return false
		}
	}
	delete(e.m, ur)
	return true
}
