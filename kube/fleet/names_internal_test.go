package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// A ClusterVersion of the rollout's namespace (or of none) and the
// rollout name each other by name; across namespaces (spec
// namespaceSelector), by NAMESPACE/NAME.
func TestMemberKeyAndRefOf(t *testing.T) {
	ur := &v1alpha1.UpgradeRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "eu"}}
	tests := []struct{ ns, key, ref string }{
		{"fleet", "c1", "eu"},
		{"", "c1", "eu"},
		{"east", "east/c1", "fleet/eu"},
	}
	for _, tt := range tests {
		cv := &v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Namespace: tt.ns, Name: "c1"}}
		if got := MemberKey(ur, cv); got != tt.key {
			t.Errorf("MemberKey(ClusterVersion of %q) = %q, want %q", tt.ns, got, tt.key)
		}
		if got := refOf(ur, cv); got != tt.ref {
			t.Errorf("refOf(ClusterVersion of %q) = %q, want %q", tt.ns, got, tt.ref)
		}
	}
}
