package controller

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestCaughtUp: the cache's copy of a ClusterVersion is trusted for a
// decision only when its resourceVersion is not older than the one this
// process last wrote; unknown, forgotten, stale or malformed versions
// send the decision past the cache.
func TestCaughtUp(t *testing.T) {
	at := func(rv string) *v1alpha1.ClusterVersion {
		return &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cluster", ResourceVersion: rv}}
	}
	tests := []struct {
		name    string
		wrote   string // "" writes nothing
		then    func(r *Reconciler)
		cached  string
		trusted bool
	}{
		{name: "never written by this process", cached: "100"},
		{name: "the write itself", wrote: "100", cached: "100", trusted: true},
		{name: "a later state", wrote: "100", cached: "101", trusted: true},
		{name: "a later state, one more digit", wrote: "99", cached: "100", trusted: true},
		{name: "an older state", wrote: "100", cached: "99"},
		{name: "an older state, one digit less", wrote: "1000", cached: "999"},
		{name: "a malformed cached version", wrote: "100", cached: "abc"},
		{name: "a malformed written version", wrote: "x1", cached: "100"},
		{name: "a conflict since", wrote: "100", cached: "101", then: func(r *Reconciler) { r.stale(keyOf(at(""))) }},
		{name: "deleted since", wrote: "100", cached: "101", then: func(r *Reconciler) { r.forget(keyOf(at(""))) }},
		{name: "two writes returned out of order", wrote: "101", cached: "100", then: func(r *Reconciler) { r.wrote(at("100")) }},
		{name: "two writes returned in order", wrote: "100", cached: "100", then: func(r *Reconciler) { r.wrote(at("101")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(nil, nil, nil)
			if tt.wrote != "" {
				r.wrote(at(tt.wrote))
			}
			if tt.then != nil {
				tt.then(r)
			}
			assert.Equal(t, tt.trusted, r.caughtUp(at(tt.cached)), "caughtUp(%s) after a write at %q", tt.cached, tt.wrote)
		})
	}
}

// TestConflictLevel: a status write that meets a newer ClusterVersion is
// the ordinary race of two writers, logged at Debug; only
// conflictsToWarn of them in a row, without a write going through, are
// a warning. A write that goes through, or the ClusterVersion's
// deletion, starts the count again.
func TestConflictLevel(t *testing.T) {
	r := New(nil, nil, nil)
	cv := &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cluster", ResourceVersion: "7"}}
	key := keyOf(cv)
	assert.Equal(t, slog.LevelDebug, r.conflictLevel(key), "no conflict yet")
	for i := 1; i < conflictsToWarn; i++ {
		r.stale(key)
		assert.Equal(t, slog.LevelDebug, r.conflictLevel(key), "after %d conflicts", i)
	}
	r.stale(key)
	assert.Equal(t, slog.LevelWarn, r.conflictLevel(key), "after %d conflicts in a row", conflictsToWarn)
	assert.Equal(t, slog.LevelDebug, r.conflictLevel(keyOf(&v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}})), "counted per ClusterVersion")

	r.wrote(cv)
	assert.Equal(t, slog.LevelDebug, r.conflictLevel(key), "a write went through")
	for range conflictsToWarn {
		r.stale(key)
	}
	r.forget(key)
	assert.Equal(t, slog.LevelDebug, r.conflictLevel(key), "deleted")
}
