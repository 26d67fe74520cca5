package controller_test

import (
	"fmt"

	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// StateUpdates is what a ClusterVersion whose versions are states shows
// as status.availableUpdates: each version of each track a route reaches,
// with the route's hop count and first hop.
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
		fmt.Printf("%s in %d, next %s\n", u.Version, u.Hops, u.Next)
	}
	// Output:
	// kubernetes=v1.35.0 in 2, next platform 13.01.2 -> 27.03.0
	// kubernetes=v1.35.1 in 2, next platform 13.01.2 -> 27.03.0
	// platform=27.03.0 in 1, next platform 13.01.2 -> 27.03.0
	// platform=27.03.1 in 2, next platform 13.01.2 -> 27.03.0
}
