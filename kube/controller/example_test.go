package controller_test

import (
	"fmt"

	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Updates is what a ClusterVersion shows as status.availableUpdates:
// here, for a system whose versions are states across tracks, each version
// of each track a route reaches, with the route's hop count and first hop.
func ExampleUpdates() {
	cat, err := release.LoadDir("../../testdata/two-track")
	if err != nil {
		panic(err)
	}
	from, _ := path.ParseState("platform=13.01.2,kubernetes=v1.34.1")
	available, _, err := controller.Updates(cat, from, nil)
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
