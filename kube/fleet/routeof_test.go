package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/fleet"
	"github.com/hopdag/hopdag/release"
)

// RouteOf resolves a ClusterVersion's route with the rollout's
// acceptRisks and channel set on it, from its status's version, else its
// spec's; a cluster that cannot go is named with the reason and the
// resolver's words.
func TestDryRunRouteOf(t *testing.T) {
	cat, err := release.Load(hopdag.SampleCatalog())
	require.NoError(t, err)
	tests := []struct {
		name    string
		target  string
		risks   []string // the rollout's acceptRisks
		cvRisks []string // the ClusterVersion's own
		spec    string
		status  string
		want    fleet.ClusterRoute
		message string
	}{
		{name: "two hops", target: "v26.09", spec: "v26.03",
			want: fleet.ClusterRoute{Current: "v26.03", Hops: []string{"v26.03 -> v26.06", "v26.06 -> v26.09"}}},
		{name: "status wins over spec", target: "v26.09", spec: "v26.03", status: "v26.06",
			want: fleet.ClusterRoute{Current: "v26.06", Hops: []string{"v26.06 -> v26.09"}}},
		{name: "at the target", target: "v26.09", spec: "v26.09",
			want: fleet.ClusterRoute{Current: "v26.09", Hops: []string{}}},
		{name: "behind a risk", target: "v26.09-rc.1", spec: "v26.06",
			want:    fleet.ClusterRoute{Current: "v26.06", Reason: "BehindRisks", Risks: []string{"containerd-v2-config"}},
			message: "add containerd-v2-config to the rollout's spec.acceptRisks to take it"},
		{name: "its own acceptRisks", target: "v26.09-rc.1", spec: "v26.06", cvRisks: []string{"containerd-v2-config"},
			want: fleet.ClusterRoute{Current: "v26.06", Hops: []string{"v26.06 -> v26.09-rc.1"}}},
		{name: "the rollout's acceptRisks replace its own", target: "v26.09-rc.1", spec: "v26.06", risks: []string{}, cvRisks: []string{"containerd-v2-config"},
			want:    fleet.ClusterRoute{Current: "v26.06", Reason: "BehindRisks", Risks: []string{"containerd-v2-config"}},
			message: "risk containerd-v2-config not accepted"},
		{name: "unknown version", target: "v26.09", spec: "v9.9",
			want: fleet.ClusterRoute{Current: "v9.9", Reason: "UnknownVersion"}, message: "v9.9"},
		{name: "no route back", target: "v26.03", spec: "v26.09",
			want: fleet.ClusterRoute{Current: "v26.09", Reason: "NoRoute"}, message: "v26.03"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ur := &v1alpha1.UpgradeRollout{Spec: v1alpha1.UpgradeRolloutSpec{DesiredVersion: v1alpha1.Target(tt.target), AcceptRisks: tt.risks}}
			cv := &v1alpha1.ClusterVersion{Spec: v1alpha1.ClusterVersionSpec{DesiredVersion: v1alpha1.Target(tt.spec), AcceptRisks: tt.cvRisks}}
			cv.Status.CurrentVersion = tt.status
			got := fleet.RouteOf(cat, ur, cv)
			assert.Contains(t, got.Message, tt.message)
			got.Message = ""
			assert.Equal(t, tt.want, got)
		})
	}
}

// Decide puts the canaries first and the waves in their label's order,
// and says which field of the spec is invalid.
func TestDryRunDecide(t *testing.T) {
	cv := func(name, wave string) v1alpha1.ClusterVersion {
		return v1alpha1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"hopdag.io/wave": wave}}}
	}
	cvs := []v1alpha1.ClusterVersion{cv("a", "late"), cv("b", "early"), cv("c", "late"), cv("d", "early")}
	tests := []struct {
		name    string
		spec    v1alpha1.UpgradeRolloutSpec
		waves   map[string][]string
		order   []string
		wantErr string
	}{
		{name: "canary and label waves",
			spec:  v1alpha1.UpgradeRolloutSpec{Canaries: &v1alpha1.Canaries{Names: []string{"c"}}, Waves: &v1alpha1.Waves{Label: "hopdag.io/wave", Order: []string{"early", "late"}}},
			order: []string{"canary", "early", "late"},
			waves: map[string][]string{"canary": {"c"}, "early": {"b", "d"}, "late": {"a"}}},
		{name: "invalid maxConcurrency",
			spec:    v1alpha1.UpgradeRolloutSpec{MaxConcurrency: &intstr.IntOrString{Type: intstr.String, StrVal: "lots"}},
			wantErr: "UpgradeRollout ns/r: spec.maxConcurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ur := &v1alpha1.UpgradeRollout{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Spec: tt.spec}
			ur.Spec.DesiredVersion = "v26.09"
			d, err := fleet.Decide(ur, cvs, time.Now())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			var order []string
			for _, w := range d.Waves {
				order = append(order, w.Name)
				assert.ElementsMatch(t, tt.waves[w.Name], w.Members, "wave %s", w.Name)
			}
			assert.Equal(t, tt.order, order)
		})
	}
}
