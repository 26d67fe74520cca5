package simulate_test

import (
	"context"
	"fmt"
	"os"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/simulate"
)

// Execute one hop of the sample catalog with simulated runners, one
// component failing on purpose: its dependents are skipped, independent
// components go on.
func ExampleExecutor() {
	c, err := release.Load(os.DirFS("../testdata/catalog"))
	if err != nil {
		fmt.Println(err)
		return
	}
	from, _ := release.ParseVersion("v26.06-rc.2")
	to, _ := release.ParseVersion("v26.06-rc.3")
	plan, err := runner.NewPlan(c, path.State{"": from}, path.State{"": to})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := simulate.Executor(c, simulate.Config{Speed: 1e6, Fail: []string{"kubernetes-master"}})
	st, err := e.Execute(context.Background(), plan, nil)
	fmt.Println("run:", st.Phase, err != nil)
	for _, cs := range st.Hops[0].Components {
		fmt.Println(cs.Name, cs.Phase)
	}
	// Output:
	// run: Failed true
	// bkeagent Succeeded
	// calico Skipped
	// kube-proxy Skipped
	// kubernetes-master Failed
	// kubernetes-worker Skipped
	// pre-upgrade-resources Succeeded
	// provider Succeeded
}
