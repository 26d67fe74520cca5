package runner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// examplePlan is the plan of Example, v1.0 -> v1.1: etcd, then the
// control plane, then the workers; change may edit the target versions.
func examplePlan(change func(*release.ComponentVersion)) *runner.Plan {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		cv := release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: name, Dependencies: deps}
		if version != "v3.5.0" && version != "v1.33.0" && change != nil {
			change(&cv)
		}
		return cv
	}
	rel := func(v string, etcd, k8s string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion(etcd)},
			{Name: "control-plane", Version: release.MustParseVersion(k8s)},
			{Name: "workers", Version: release.MustParseVersion(k8s)},
		}}
	}
	catalog, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v3.5.0", "v1.33.0"), rel("v1.1", "v3.6.0", "v1.34.0")},
		[]release.ComponentVersion{
			comp("etcd", "v3.5.0"), comp("etcd", "v3.6.0"),
			comp("control-plane", "v1.33.0", "etcd"), comp("control-plane", "v1.34.0", "etcd"),
			comp("workers", "v1.33.0", "control-plane"), comp("workers", "v1.34.0", "control-plane"),
		},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v1.1")}}}},
	)
	if err != nil {
		panic(err)
	}
	plan, err := runner.NewPlan(catalog, path.MustParseState("v1.0"), path.MustParseState("v1.1"))
	if err != nil {
		panic(err)
	}
	return plan
}

// undo is a runner that can roll back: the workers fail to upgrade.
type undo struct{ mu sync.Mutex }

func (u *undo) Run(_ context.Context, t runner.Task) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Println("upgrade", t.Component, "to", t.To.Version)
	if t.Component == "workers" {
		return runner.Permanent(errors.New("kubelet does not start"))
	}
	return nil
}

func (u *undo) Rollback(_ context.Context, t runner.Task) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Println("roll back", t.Component, "to", t.From.Version)
	return nil
}

// With the Rollback policy a failed hop is rolled back, dependents
// first: the system is back at the release it started from.
func ExampleRollback() {
	st, err := runner.New(&undo{}, runner.WithFailurePolicy(runner.Rollback)).Execute(context.Background(), examplePlan(nil), nil)
	fmt.Println("run failed:", errors.Is(err, runner.ErrRunFailed))
	fmt.Println(st.Phase, "-", st.Hops[0].Message)
	// Output:
	// upgrade etcd to v3.6.0
	// upgrade control-plane to v1.34.0
	// upgrade workers to v1.34.0
	// roll back workers to v1.33.0
	// roll back control-plane to v1.33.0
	// roll back etcd to v3.5.0
	// run failed: true
	// RolledBack - rolled back: control-plane@v1.33.0, etcd@v3.5.0, workers@v1.33.0
}

// A gate on the workers stops the run before them; an approval, kept in
// the status, lets the next run go on.
func ExampleStatus_Approve() {
	plan := examplePlan(func(cv *release.ComponentVersion) {
		if cv.Name == "workers" {
			cv.Gate = &release.Gate{Reason: "drain the nodes' traffic first"}
		}
	})
	upgrade := runner.RunnerFunc(func(_ context.Context, t runner.Task) error {
		fmt.Println("upgrade", t.Component)
		return nil
	})
	e := runner.New(upgrade)
	st, err := e.Execute(context.Background(), plan, nil)
	fmt.Println(st.Phase, st.Waiting, errors.Is(err, runner.ErrWaitingForApproval))

	if err := st.Approve("v1.1/workers", "alice", time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)); err != nil {
		fmt.Println(err)
		return
	}
	st, err = e.Execute(context.Background(), plan, st)
	fmt.Println(st.Phase, err, st.Approvals[0].By)
	// Output:
	// upgrade etcd
	// upgrade control-plane
	// WaitingForApproval [v1.1/workers] true
	// upgrade workers
	// Succeeded <nil> alice
}

// A runner says what it waits for with Task.Waiting; an observer gets a
// ComponentWaiting event each time the message changes.
func ExampleTask_Waiting() {
	rn := runner.RunnerFunc(func(_ context.Context, t runner.Task) error {
		if t.Component == "workers" {
			for _, ready := range []int{1, 1, 2, 3} {
				t.Waiting(fmt.Sprintf("waiting for DaemonSet kube-system/kubelet: %d of 3 updated", ready))
			}
		}
		return nil
	})
	show := runner.ObserverFunc(func(ev runner.Event) {
		if ev.Type == runner.ComponentWaiting {
			fmt.Println(ev.Component+":", ev.Reason)
		}
	})
	e := runner.New(rn, runner.WithBlockingObserver(show))
	if _, err := e.Execute(context.Background(), examplePlan(nil), nil); err != nil {
		fmt.Println(err)
	}
	// Output:
	// workers: waiting for DaemonSet kube-system/kubelet: 1 of 3 updated
	// workers: waiting for DaemonSet kube-system/kubelet: 2 of 3 updated
	// workers: waiting for DaemonSet kube-system/kubelet: 3 of 3 updated
}
