package v1alpha1_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// A ClusterVersion asks for a version; AddToScheme makes its kind known to
// a local scheme.
func Example() {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	cv := &v1alpha1.ClusterVersion{Spec: v1alpha1.ClusterVersionSpec{
		DesiredVersion:   "v26.09",
		InstalledVersion: "v26.06-rc.2",
		AcceptRisks:      []string{"containerd-v2-config"},
	}}
	gvks, _, err := s.ObjectKinds(cv)
	if err != nil {
		panic(err)
	}
	cp := cv.DeepCopy()
	cp.Spec.AcceptRisks[0] = "changed"
	fmt.Println(gvks[0].Kind, gvks[0].GroupVersion())
	fmt.Println(cv.Spec.InstalledVersion, "->", cv.Spec.DesiredVersion, cv.Spec.AcceptRisks)
	// Output:
	// ClusterVersion hopdag.io/v1alpha1
	// v26.06-rc.2 -> v26.09 [containerd-v2-config]
}
