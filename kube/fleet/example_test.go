package fleet_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/fleet"
	"github.com/hopdag/hopdag/release"
)

// The dry run of a rollout to v26.09-rc.1 of the sample catalog, without
// a cluster: Decide puts the canary in the first wave, RouteOf gives each
// ClusterVersion its route, or says which risks it waits for.
func ExampleRouteOf() {
	cat, err := release.Load(hopdag.SampleCatalog())
	if err != nil {
		panic(err)
	}
	ur := &v1alpha1.UpgradeRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "clusters"},
		Spec: v1alpha1.UpgradeRolloutSpec{
			DesiredVersion: "v26.09-rc.1",
			Canaries:       &v1alpha1.Canaries{Names: []string{"alpha"}},
		},
	}
	cv := func(name, version string, risks ...string) v1alpha1.ClusterVersion {
		return v1alpha1.ClusterVersion{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "clusters"},
			Spec:       v1alpha1.ClusterVersionSpec{DesiredVersion: v1alpha1.Target(version), AcceptRisks: risks},
		}
	}
	cvs := []v1alpha1.ClusterVersion{
		cv("alpha", "v26.06", "containerd-v2-config"),
		cv("bravo", "v26.03", "containerd-v2-config"),
		cv("echo", "v26.06"),
	}
	d, err := fleet.Decide(ur, cvs, time.Now())
	if err != nil {
		panic(err)
	}
	for _, w := range d.Waves {
		fmt.Println("wave", w.Name+":", w.Members)
	}
	for i := range cvs {
		r := fleet.RouteOf(cat, ur, &cvs[i])
		if r.Reason != "" {
			fmt.Println(cvs[i].Name, r.Current, r.Reason, r.Risks)
			continue
		}
		fmt.Println(cvs[i].Name, r.Current, "->", r.Hops)
	}
	// Output:
	// wave canary: [alpha]
	// wave fleet: [bravo echo]
	// alpha v26.06 -> [v26.06 -> v26.09-rc.1]
	// bravo v26.03 -> [v26.03 -> v26.06 v26.06 -> v26.09-rc.1]
	// echo v26.06 BehindRisks [containerd-v2-config]
}
