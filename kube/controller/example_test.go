package controller_test

import (
	"fmt"

	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// StateUpdates is what a ClusterVersion whose versions are states shows
// as status.availableUpdates: each version of each track a route reaches.
func ExampleStateUpdates() {
	cat, err := release.LoadDir("../../testdata/two-track")
	if err != nil {
		panic(err)
	}
	from, _ := path.ParseState("platform=13.01.2,kubernetes=v1.34.1")
	available, _, err := controller.StateUpdates(cat, from, nil)
	if err != nil {
		panic(err)
	}
	for _, u := range available {
		fmt.Println(u.Version, u.Hops, u.Route)
	}
	// Output:
	// kubernetes=v1.35.0 2 [kubernetes=v1.34.1,platform=13.01.2 kubernetes=v1.34.1,platform=27.03.0 kubernetes=v1.35.0,platform=27.03.0]
	// kubernetes=v1.35.1 2 [kubernetes=v1.34.1,platform=13.01.2 kubernetes=v1.34.1,platform=27.03.0 kubernetes=v1.35.1,platform=27.03.0]
	// platform=27.03.0 1 [kubernetes=v1.34.1,platform=13.01.2 kubernetes=v1.34.1,platform=27.03.0]
	// platform=27.03.1 2 [kubernetes=v1.34.1,platform=13.01.2 kubernetes=v1.34.1,platform=27.03.0 kubernetes=v1.34.1,platform=27.03.1]
}
