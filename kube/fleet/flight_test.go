package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/fleet"
)

// flight follows a fleet's ClusterVersions through every change the API
// server made to them, in the order it made them, and counts after each
// change those an UpgradeRollout has in flight.
//
// A ClusterVersion is in flight from the change that sets its
// spec.desiredVersion to the rollout's target until the change of its
// status that says it is there: status.currentVersion the target, phase
// Idle, status.observedGeneration at least metadata.generation (the
// reconciler saw the new desiredVersion). That is what the fleet
// controller counts against maxConcurrency (kube/fleet's memberOf and
// kube/rollout's Decide: started, by its annotations, and not AtTarget;
// with no minSuccessTime and no failure nothing else is in flight), read
// from the fields the two controllers write, not from the fleet's
// annotations; it holds every component run of the ClusterVersion, and
// more: the time between the start and the reconciler's first component,
// and between the last component and the status that says done. Counted
// after every change of the API server's history, it misses no moment (a
// poll could miss a ClusterVersion started and done between two polls).
//
// A correct controller keeps this count within maxConcurrency at every
// change: it decides from its cache, an earlier point of the same
// history, and only starts ClusterVersions, which leave flight by
// themselves; so it is enough that its cache shows every start made
// before its decision: its own (the expectations of expect.go) and,
// after a restart, its predecessor's (the new cache's first List is
// consistent with the API server).
//
// It also checks what a start is: the patch that sets desiredVersion
// writes the rollout's annotations (fleet.Rollout, fleet.Started) with
// it, and a Started annotation, once written, never changes (a
// ClusterVersion is started once).
type flight struct {
	target  v1alpha1.Target
	rollout string
	limit   int

	mu      sync.Mutex
	in      map[string]bool   // in flight now
	done    map[string]bool   // reached the target
	started map[string]string // the Started annotation last seen
	changes int               // changes seen
	peak    int
	// over, restarted and split are the moments that broke a rule: more
	// than limit in flight, a Started annotation rewritten, a target set
	// without the rollout's annotations.
	over, restarted, split []string
}

func newFlight(target v1alpha1.Target, rollout string, limit int) *flight {
	return &flight{target: target, rollout: rollout, limit: limit, in: map[string]bool{}, done: map[string]bool{}, started: map[string]string{}}
}

// observe takes cv as changed at resourceVersion rv; changes must come in
// the API server's order.
func (f *flight) observe(rv string, cv *v1alpha1.ClusterVersion) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes++
	name := cv.Name
	aimed := cv.Spec.DesiredVersion == f.target
	st := &cv.Status
	there := aimed && st.CurrentVersion == string(f.target) && st.Phase == v1alpha1.PhaseIdle && st.ObservedGeneration >= cv.Generation
	f.in[name] = aimed && !there
	if !f.in[name] {
		delete(f.in, name)
	}
	f.done[name] = there
	if aimed && (cv.Annotations[fleet.Rollout] != f.rollout || cv.Annotations[fleet.Started] == "") {
		f.split = append(f.split, fmt.Sprintf("rv %s: %s aims at %s with annotations %s=%q %s=%q", rv, name, f.target, fleet.Rollout, cv.Annotations[fleet.Rollout], fleet.Started, cv.Annotations[fleet.Started]))
	}
	if at := cv.Annotations[fleet.Started]; at != "" {
		if was, ok := f.started[name]; ok && was != at {
			f.restarted = append(f.restarted, fmt.Sprintf("rv %s: %s started again at %s (before at %s)", rv, name, at, was))
		}
		f.started[name] = at
	}
	f.peak = max(f.peak, len(f.in))
	if len(f.in) > f.limit {
		f.over = append(f.over, fmt.Sprintf("rv %s: %d in flight, more than %d: %s", rv, len(f.in), f.limit, f.inFlight()))
	}
}

// gone forgets the ClusterVersion name, deleted.
func (f *flight) gone(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes++
	delete(f.in, name)
	delete(f.done, name)
}

// inFlight names the ClusterVersions in flight, sorted; f.mu is held.
func (f *flight) inFlight() string {
	var names []string
	for n := range f.in {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// now is how many are in flight and how many reached the target.
func (f *flight) now() (inFlight, done int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.done {
		if d {
			done++
		}
	}
	return len(f.in), done
}

// startedCount is how many ClusterVersions were started.
func (f *flight) startedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started)
}

// seen is how many changes f saw, and the most in flight at once.
func (f *flight) seen() (changes, peak int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes, f.peak
}

// follow feeds f every change of the ClusterVersions of ns from now
// until ctx ends or the test does: a List, then a watch from its resourceVersion (the
// API server sends each change of each object once, in resourceVersion
// order); a watch the server closes resumes where it stopped. A watch
// error (its history compacted) fails t: the count would have a hole.
func (f *flight) follow(ctx context.Context, t *testing.T, c client.WithWatch, ns string) {
	t.Helper()
	var l v1alpha1.ClusterVersionList
	require.NoError(t, c.List(ctx, &l, client.InNamespace(ns)))
	for i := range l.Items {
		f.observe(l.ResourceVersion, &l.Items[i])
	}
	rv := l.ResourceVersion
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := c.Watch(ctx, &v1alpha1.ClusterVersionList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("watching the ClusterVersions of %s from resourceVersion %s: %v", ns, rv, err)
				}
				return
			}
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified:
					cv := ev.Object.(*v1alpha1.ClusterVersion)
					rv = cv.ResourceVersion
					f.observe(rv, cv)
				case watch.Deleted:
					cv := ev.Object.(*v1alpha1.ClusterVersion)
					rv = cv.ResourceVersion
					f.gone(cv.Name)
				case watch.Error:
					if ctx.Err() != nil {
						continue // the test is over: the watch ends
					}
					t.Errorf("watching the ClusterVersions of %s after resourceVersion %s: %v: the count of those in flight has a hole", ns, rv, ev.Object)
					w.Stop()
					return
				}
			}
			w.Stop()
		}
	}()
}

// TestFlightCounts: the count of the kill test follows a ClusterVersion
// from the change that aims it at the target to the status that says
// it is there, and names the moments that break its rules.
func TestFlightCounts(t *testing.T) {
	const target = "v26.06"
	// cv is a ClusterVersion c at generation gen aiming at desired,
	// its status at current, phase and observedGeneration obs, started
	// at started ("" not).
	cv := func(c, desired, current string, phase v1alpha1.Phase, gen, obs int64, started string) *v1alpha1.ClusterVersion {
		o := &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: c, Generation: gen},
			Spec:   v1alpha1.ClusterVersionSpec{DesiredVersion: v1alpha1.Target(desired)},
			Status: v1alpha1.ClusterVersionStatus{CurrentVersion: current, Phase: phase, ObservedGeneration: obs}}
		if started != "" {
			o.Annotations = map[string]string{fleet.Rollout: "r", fleet.Started: started}
		}
		return o
	}
	const old, idle, busy = "v26.06-rc.2", v1alpha1.PhaseIdle, v1alpha1.PhaseUpgrading
	tests := []struct {
		name                   string
		changes                []*v1alpha1.ClusterVersion
		peak                   int
		over, restarted, split int
		inFlight, done         int
	}{
		{"one after another", []*v1alpha1.ClusterVersion{
			cv("a", old, old, idle, 1, 1, ""), cv("b", old, old, idle, 1, 1, ""),
			cv("a", target, old, idle, 2, 1, "t1"), cv("a", target, old, busy, 2, 2, "t1"), cv("a", target, target, idle, 2, 2, "t1"),
			cv("b", target, old, idle, 2, 1, "t2"), cv("b", target, target, idle, 2, 2, "t2"),
		}, 1, 0, 0, 0, 0, 2},
		{"in flight from the start, before the reconciler sees it", []*v1alpha1.ClusterVersion{
			cv("a", target, old, busy, 2, 2, "t1"), cv("b", target, old, idle, 2, 1, "t1"),
		}, 2, 1, 0, 0, 2, 0},
		{"at the target only once the reconciler saw the generation", []*v1alpha1.ClusterVersion{
			cv("a", target, target, idle, 3, 2, "t1"), cv("b", target, old, idle, 2, 1, "t1"),
		}, 2, 1, 0, 0, 2, 0},
		{"the next starts once the first is there", []*v1alpha1.ClusterVersion{
			cv("a", target, old, busy, 2, 2, "t1"), cv("a", target, target, idle, 2, 2, "t1"), cv("b", target, old, idle, 2, 1, "t2"),
		}, 1, 0, 0, 0, 1, 1},
		{"started again", []*v1alpha1.ClusterVersion{
			cv("a", target, old, busy, 2, 2, "t1"), cv("a", target, old, busy, 2, 2, "t2"),
		}, 1, 0, 1, 0, 1, 0},
		{"aimed without the annotations", []*v1alpha1.ClusterVersion{
			cv("a", target, old, idle, 2, 1, ""),
		}, 1, 0, 0, 1, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFlight(target, "r", 1)
			for i, c := range tt.changes {
				f.observe(fmt.Sprint(i+1), c)
			}
			inFlight, done := f.now()
			assert.Equal(t, tt.peak, f.peak, "peak")
			assert.Len(t, f.over, tt.over, "moments over the limit: %q", f.over)
			assert.Len(t, f.restarted, tt.restarted, "restarts: %q", f.restarted)
			assert.Len(t, f.split, tt.split, "targets without annotations: %q", f.split)
			assert.Equal(t, tt.inFlight, inFlight, "in flight at the end")
			assert.Equal(t, tt.done, done, "at the target at the end")
		})
	}
}
