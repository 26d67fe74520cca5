package fleet

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// expectations are the starts this process made that its cache may not
// show yet: by rollout, the ClusterVersions it started and the Started
// annotation it wrote on each. The decisions read the ClusterVersions
// from the cache (a fleet of thousands read past it at every reconcile
// costs the API server and the controller more than the upgrades do), and
// the cache lags the controller's own writes: a decision taken on a
// cache that does not show a start would count one upgrade fewer in
// flight and could exceed maxConcurrency. So a reconcile waits until the
// cache shows every start of the one before (as the ReplicaSet
// controller's expectations do). A new process has none, and its cache
// is filled by a List: it decides from what the API server has.
type expectations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]string
}

// expect records that the ClusterVersions of started (name to Started
// annotation) were started for rollout ur.
func (e *expectations) expect(ur types.NamespacedName, started map[string]string) {
	if len(started) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.NamespacedName]map[string]string{}
	}
	e.m[ur] = started
}

// caughtUp reports whether cvs, as the cache has them, show every start
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
		if at, ok := want[cvs[i].Name]; ok && cvs[i].Annotations[Started] != at {
			return false
		}
	}
	delete(e.m, ur)
	return true
}
