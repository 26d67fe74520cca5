package controller_test

import (
	"errors"
	"fmt"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
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

// Route is the route a ClusterVersion would take, as its reconciler
// resolves it: kube/fleet's dry run asks it for every cluster of a fleet
// before anything starts. A target only behind a risk has no route until
// the risk is accepted.
func ExampleRoute() {
	cat, err := release.LoadDir("../../testdata/catalog")
	if err != nil {
		panic(err)
	}
	spec := v1alpha1.ClusterVersionSpec{DesiredVersion: "v26.09-rc.1"}
	_, err = controller.Route(cat, &spec, "v26.06-rc.2")
	var nr *path.NoRouteError
	if errors.As(err, &nr) {
		fmt.Println("behind risks:", nr.Risks)
	}
	spec.AcceptRisks = nr.Risks
	route, err := controller.Route(cat, &spec, "v26.06-rc.2")
	if err != nil {
		panic(err)
	}
	for _, h := range controller.HopNames(route) {
		fmt.Println(h)
	}
	// Output:
	// behind risks: [containerd-v2-config]
	// v26.06-rc.2 -> v26.06-rc.3
	// v26.06-rc.3 -> v26.06
	// v26.06 -> v26.09-rc.1
}
