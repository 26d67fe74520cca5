package apply_test

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/kube/apply"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// operator is docs/operator.md's wiring snippet (section "The
// applier"), verbatim between the markers; TestReadmeSnippet checks it. It
// compiles here and needs a cluster to run.
//
// snippet:start
func operator(ctx context.Context, mgr ctrl.Manager, plan *runner.Plan) error {
	// Server-side apply through the manager's API server, as
	// "cluster-version-operator", inventories in hopdag-system, objects
	// labelled as instance "prod-eu-1".
	applier, err := apply.New(mgr.GetConfig(), apply.WithFieldManager("cluster-version-operator"))
	if err != nil {
		return err
	}
	router := components.NewRouter().
		Register(release.TypeManifest, components.NewManifest(applier, components.WithInstance("prod-eu-1")))
	// An operator gives the router to kube/controller.New, which runs the
	// ClusterVersion's upgrades (see "Use it in an operator"); a program
	// runs a plan with it itself:
	_, err = runner.New(router).Execute(ctx, plan, nil)
	return err
}

// snippet:end

// ExampleNew shows the wiring of an operator (see operator: it needs a
// cluster, so it is compiled, not run).
func ExampleNew() {
	_ = operator
}

// A ChangeSet is what an Apply or a Delete did, one object a line.
func ExampleChangeSet() {
	cs := apply.ChangeSet{
		{Object: components.Ref{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, Action: apply.Unchanged},
		{Object: components.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web"}, Action: apply.Configured},
		{Object: components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "old"}, Action: apply.Pruned, DryRun: true},
		{Object: components.Ref{Version: "v1", Kind: "Namespace", Name: "shared"}, Action: apply.Skipped, Reason: `labelled as component "b"`},
	}
	fmt.Print(cs)
	fmt.Println(cs.Count(apply.Configured), "configured")
	// Output:
	// CustomResourceDefinition.apiextensions.k8s.io widgets.example.com unchanged
	// Deployment.apps web/web configured
	// ConfigMap web/old pruned (dry run)
	// Namespace shared skipped (labelled as component "b")
	// 1 configured
}

// A conflict names the other field managers and the fields.
func ExampleConflictError() {
	err := &apply.ConflictError{
		Object:       components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "cfg"},
		FieldManager: "hopdag", Managers: []string{"ops-team"}, Fields: []string{".data.mode"},
	}
	fmt.Println(err)
	// Output:
	// apply: ConfigMap web/cfg: field manager hopdag conflicts with "ops-team" on .data.mode; leave these fields to "ops-team", or apply with Force to take them over
}

// An object another installation owns is refused, naming its owner and
// the fixes.
func ExampleOwnerError() {
	err := &apply.OwnerError{
		Object:    components.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "shared-cm"},
		Component: "x", Instance: "ib", OwnerComponent: "x", OwnerInstance: "ia",
	}
	fmt.Println(err)
	// Output:
	// apply ConfigMap default/shared-cm: refused: it belongs to component "x" of instance "ia" (its hopdag.io/component and hopdag.io/instance labels), not to "x" of "ib", and the prune of either would delete it from under the other; give both installations the same instance (components.WithInstance; hopdag run --instance), or remove the object from one of the two components, or take it over with apply.WithTakeOver (the old owner's prune then leaves it)
}

// The summary a manifest component reports while its health check waits
// (runner.Task.Waiting): the first object not ready and kstatus's count.
func ExampleUnreadyError_Waiting() {
	err := &apply.UnreadyError{Check: "calico-ready", Objects: []apply.Unready{
		{Object: components.Ref{Group: "apps", Version: "v1", Kind: "DaemonSet", Namespace: "kube-system", Name: "calico-node"}, Status: "InProgress", Message: "Updated: 3/5"},
		{Object: components.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "kube-system", Name: "calico-kube-controllers"}, Status: "InProgress", Message: "Available: 0/1"},
	}}
	fmt.Println(err.Waiting())
	// Output:
	// waiting for DaemonSet kube-system/calico-node: 3 of 5 updated and 1 more object
}
