package catalog_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
)

// Objects as an API server lists them load into a release.Catalog; a
// problem names the object and the field.
func ExampleObjects_Catalog() {
	objs := &catalog.Objects{
		Releases: []v1alpha1.Release{{
			ObjectMeta: metav1.ObjectMeta{Name: "platform-v1.1"},
			Spec:       v1alpha1.ReleaseSpec{Version: "v1.1", Components: []v1alpha1.ComponentRef{{Name: "agent", Version: "v2.0"}}},
		}},
		Components: []v1alpha1.ComponentVersion{{
			ObjectMeta: metav1.ObjectMeta{Name: "agent-v2.0"},
			Spec:       v1alpha1.ComponentVersionSpec{Name: "agent", Version: "v2.0", Handler: "agent"},
		}},
	}
	c, err := objs.Catalog()
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Versions(), c.Components[0].Source.File)

	objs.Components[0].Spec.Dependencies = []string{"agent"}
	_, err = objs.Catalog()
	fmt.Println(err)
	// Output:
	// [v1.1] ComponentVersion/agent-v2.0
	// release: invalid catalog: 1 problem
	//   ComponentVersion/agent-v2.0: spec.dependencies[0]: component agent depends on itself; remove it from spec.dependencies
}
