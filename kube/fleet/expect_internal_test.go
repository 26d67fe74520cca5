package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// The expectations of a rollout hold its reconciles until the cache
// shows each annotation written (Started and RollbackBy alike, merged),
// for expectTimeout at most, and go when the rollout is forgotten.
func TestExpectations(t *testing.T) {
	cv := func(name string, ann map[string]string) v1alpha1.ClusterVersion {
		return v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
	}
	ur := types.NamespacedName{Namespace: "fleet", Name: "to-v2"}
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		cache   []v1alpha1.ClusterVersion
		after   time.Duration
		want    bool
		expired []string
	}{
		{"the cache shows neither", []v1alpha1.ClusterVersion{cv("a", nil), cv("b", nil)}, 0, false, nil},
		{"the start only", []v1alpha1.ClusterVersion{cv("a", map[string]string{Started: "t"}), cv("b", nil)}, 0, false, nil},
		{"both", []v1alpha1.ClusterVersion{cv("a", map[string]string{Started: "t"}), cv("b", map[string]string{RollbackBy: "to-v2"})}, 0, true, nil},
		{"one gone from the cache counts as shown", []v1alpha1.ClusterVersion{cv("a", map[string]string{Started: "t"})}, 0, true, nil},
		{"another value", []v1alpha1.ClusterVersion{cv("a", map[string]string{Started: "u"}), cv("b", map[string]string{RollbackBy: "to-v2"})}, 0, false, nil},
		{"not shown, but waited for long enough", []v1alpha1.ClusterVersion{cv("a", nil), cv("b", nil)}, expectTimeout, true, []string{"a", "b"}},
		{"shown, after long enough", []v1alpha1.ClusterVersion{cv("a", map[string]string{Started: "t"}), cv("b", map[string]string{RollbackBy: "to-v2"})}, expectTimeout, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			e := &expectations{now: func() time.Time { return now }}
			e.expect(ur, Started, map[string]string{"a": "t"})
			e.expect(ur, RollbackBy, map[string]string{"b": "to-v2"})
			now = now.Add(tt.after)
			ok, expired := e.caughtUp(ur, tt.cache, byName)
			assert.Equal(t, tt.want, ok)
			assert.Equal(t, tt.expired, expired)
			ok, _ = e.caughtUp(types.NamespacedName{Namespace: "fleet", Name: "other"}, tt.cache, byName)
			assert.True(t, ok, "another rollout expects nothing")
			if tt.want {
				ok, _ = e.caughtUp(ur, nil, byName)
				assert.True(t, ok, "forgotten once caught up")
			}
			e.forget(ur)
			ok, _ = e.caughtUp(ur, tt.cache, byName)
			assert.True(t, ok, "forgotten with the rollout")
		})
	}
}

// byName keys a ClusterVersion by its name, as a rollout of its own
// namespace does.
func byName(cv *v1alpha1.ClusterVersion) string { return cv.Name }
