package helm_test

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/release"
)

// A chart reference is resolved at plan time: a version the catalog pins
// that the chart is not fails before anything runs.
func ExampleRunner_Validate() {
	r := helm.New(&rest.Config{Host: "https://127.0.0.1:6443"}, helm.WithChartRoot("testdata"))
	cv := &release.ComponentVersion{Name: "app", Version: release.MustParseVersion("v1.0"), Type: release.TypeHelm,
		Helm: &release.HelmChart{Chart: "charts/app", Version: "0.1.0", Values: "greeting: hello\nport: 80\nsize: 1\n"}}
	fmt.Println(r.Validate(cv))
	cv.Helm.Version = "0.2.0"
	fmt.Println(r.Validate(cv))
	// Output:
	// <nil>
	// helm: app@v1.0: chart charts/app is version 0.1.0, the catalog pins 0.2.0
}
