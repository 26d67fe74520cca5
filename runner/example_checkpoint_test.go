package runner_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// printJournal is a ChangeCheckpointer that prints what each checkpoint
// would write: the component records that changed since the last one.
type printJournal struct{}

func (printJournal) Checkpoint(context.Context, *record.Status) error { return nil }

func (printJournal) CheckpointChanges(_ context.Context, s *record.Status, changed []record.Ref) error {
	var recs []string
	for _, r := range changed {
		c := s.Hops[r.Hop].Components[r.Component]
		recs = append(recs, c.Name+"="+string(c.Phase))
	}
	fmt.Println(strings.TrimSpace(fmt.Sprintf("%-9s %s", s.Phase, strings.Join(recs, " "))))
	return nil
}

// A ChangeCheckpointer is told which component records changed, so that
// a store writes those and not the whole run. The first checkpoint lists
// every component; then each round of the scheduler records the
// components that started (before their runners run) and those that
// ended, together.
func ExampleChangeCheckpointer() {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		return release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: name, Dependencies: deps}
	}
	rel := func(v, etcd, k8s string) release.Release {
		return release.Release{Version: release.MustParseVersion(v), Components: []release.ComponentRef{
			{Name: "etcd", Version: release.MustParseVersion(etcd)},
			{Name: "control-plane", Version: release.MustParseVersion(k8s)},
		}}
	}
	catalog, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v3.5.0", "v1.33.0"), rel("v1.1", "v3.6.0", "v1.34.0")},
		[]release.ComponentVersion{comp("etcd", "v3.5.0"), comp("etcd", "v3.6.0"),
			comp("control-plane", "v1.33.0", "etcd"), comp("control-plane", "v1.34.0", "etcd")},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v1.1")}}}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := runner.NewPlan(catalog, path.MustParseState("v1.0"), path.MustParseState("v1.1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	noop := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	_, err = runner.New(noop, runner.WithCheckpointer(printJournal{})).Execute(context.Background(), plan, nil)
	fmt.Println("error:", err)
	// Output:
	// Running   control-plane=Pending etcd=Pending
	// Running
	// Running   etcd=Running
	// Running   control-plane=Running etcd=Succeeded
	// Running   control-plane=Succeeded
	// Running
	// Succeeded
	// error: <nil>
}

// changeLog is a checkpointer that records what changed whether Execute
// calls it directly or through a wrapper: its Checkpoint reads the
// changes from the ctx (runner.Changes), as state.Checkpointer does.
type changeLog struct{}

func (changeLog) Checkpoint(ctx context.Context, s *record.Status) error {
	changed, ok := runner.Changes(ctx, s)
	if !ok {
		fmt.Println("whole status")
		return nil
	}
	var recs []string
	for _, r := range changed {
		c := s.Hops[r.Hop].Components[r.Component]
		recs = append(recs, c.Name+"="+string(c.Phase))
	}
	fmt.Println(strings.TrimSpace(fmt.Sprintf("%-9s %s", s.Phase, strings.Join(recs, " "))))
	return nil
}

// A Checkpointer wrapped in a plain CheckpointFunc (here, one that counts
// checkpoints) still learns what changed, when the wrapper passes its ctx
// and the status on: a store it wraps then writes what changed, not the
// whole run every round.
func ExampleChanges() {
	comp := func(name, version string, deps ...string) release.ComponentVersion {
		return release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: name, Dependencies: deps}
	}
	catalog, err := release.NewCatalog(
		[]release.Release{
			{Version: release.MustParseVersion("v1.0"), Components: []release.ComponentRef{{Name: "etcd", Version: release.MustParseVersion("v3.5.0")}}},
			{Version: release.MustParseVersion("v1.1"), Components: []release.ComponentRef{{Name: "etcd", Version: release.MustParseVersion("v3.6.0")}}},
		},
		[]release.ComponentVersion{comp("etcd", "v3.5.0"), comp("etcd", "v3.6.0")},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: release.MustParseVersion("v1.1")}}}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := runner.NewPlan(catalog, path.MustParseState("v1.0"), path.MustParseState("v1.1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	var inner changeLog
	n := 0
	counted := runner.CheckpointFunc(func(ctx context.Context, s *record.Status) error {
		n++
		return inner.Checkpoint(ctx, s) // ctx and s as Execute passed them
	})
	noop := runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
	_, err = runner.New(noop, runner.WithCheckpointer(counted)).Execute(context.Background(), plan, nil)
	fmt.Println("checkpoints:", n, "error:", err)
	// Output:
	// Running   etcd=Pending
	// Running
	// Running   etcd=Running
	// Running   etcd=Succeeded
	// Running
	// Succeeded
	// checkpoints: 6 error: <nil>
}
