package components_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// exampleCatalog ships etcd (inline) and coredns (manifest, after etcd) in
// two releases.
func exampleCatalog() *release.Catalog {
	v := release.MustParseVersion
	coredns := func(version string) release.ComponentVersion {
		return release.ComponentVersion{Name: "coredns", Version: v(version), Type: release.TypeManifest, Dependencies: []string{"etcd"},
			Params: map[string]string{"image": "coredns:" + version},
			Manifests: []release.Manifest{{Name: "coredns.yaml", Template: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
spec:
  template:
    spec:
      containers:
        - name: coredns
          image: {{ .Values.registry }}/{{ .Component.Params.image }}
`}}}
	}
	etcd := func(version string) release.ComponentVersion {
		return release.ComponentVersion{Name: "etcd", Version: v(version), Type: release.TypeInline, Handler: "etcd"}
	}
	rel := func(version, etcd, dns string) release.Release {
		return release.Release{Version: v(version), Components: []release.ComponentRef{{Name: "etcd", Version: v(etcd)}, {Name: "coredns", Version: v(dns)}}}
	}
	c, err := release.NewCatalog(
		[]release.Release{rel("v1.0", "v3.5.0", "v1.11.0"), rel("v1.1", "v3.6.0", "v1.12.0")},
		[]release.ComponentVersion{etcd("v3.5.0"), etcd("v3.6.0"), coredns("v1.11.0"), coredns("v1.12.0")},
		[]release.UpgradePath{{Rules: []release.Rule{{From: release.MustParseConstraint("v1.0"), To: v("v1.1")}}}},
	)
	if err != nil {
		panic(err)
	}
	return c
}

// A Router sends each component to the runner of its type. Given to
// runner.NewPlan through runner.ForExecutor, it refuses a plan with a
// component nothing can run before anything runs.
func ExampleRouter() {
	catalog := exampleCatalog()
	from, to := release.MustParseVersion("v1.0"), release.MustParseVersion("v1.1")

	etcd := runner.RunnerFunc(func(ctx context.Context, t runner.Task) error {
		fmt.Printf("upgrade etcd %s -> %s\n", t.From.Version, t.To.Version)
		return nil
	})
	rec := components.NewRecorder()
	router := components.NewRouter().
		Register(release.TypeInline, components.NewInline().Register("etcd", etcd)).
		Register(release.TypeManifest, components.NewManifest(rec, components.WithValues(map[string]any{"registry": "mirror.local"})))
	fmt.Println("types:", router.Types())

	exec := runner.New(router)
	plan, err := runner.NewPlan(catalog, path.State{"": from}, path.State{"": to}, runner.ForExecutor(exec))
	if err != nil {
		fmt.Println(err)
		return
	}
	status, err := exec.Execute(context.Background(), plan, nil)
	fmt.Println(status.Phase, err)
	for _, a := range rec.Actions() {
		fmt.Println(a)
	}

	// Without a manifest runner, the plan is refused.
	partial := components.NewRouter().Register(release.TypeInline, components.NewInline().Register("etcd", etcd))
	_, err = runner.NewPlan(catalog, path.State{"": from}, path.State{"": to}, runner.ForExecutor(runner.New(partial)))
	fmt.Println(errors.Is(err, runner.ErrInvalidPlan))
	fmt.Println(err)
	// Output:
	// types: [inline manifest]
	// upgrade etcd v3.5.0 -> v3.6.0
	// Succeeded <nil>
	// coredns v1.12.0: apply Deployment kube-system/coredns
	// true
	// runner: invalid plan: hop 1 v1.0 -> v1.1: component coredns: components: coredns v1.12.0: validate: no runner registered for component type "manifest" (registered: inline)
}

// An inline handler with phases: a node already at the target is Skipped,
// the others are drained, upgraded and uncordoned.
func ExampleInline() {
	live := map[string]string{"node-a": "v1.34.1", "node-b": "v1.33.3"}
	kubelet := components.Phases{
		NeedsUpgrade: func(ctx context.Context, t runner.Task) (bool, error) {
			return live[t.Component] != t.To.Version.Original(), nil
		},
		PreUpgrade: func(ctx context.Context, t runner.Task) error {
			fmt.Println("drain", t.Component)
			return nil
		},
		Upgrade: func(ctx context.Context, t runner.Task) error {
			fmt.Println("upgrade", t.Component, "to", t.To.Version)
			live[t.Component] = t.To.Version.Original()
			return nil
		},
		PostUpgrade: func(ctx context.Context, t runner.Task) error {
			fmt.Println("uncordon", t.Component)
			return nil
		},
	}
	in := components.NewInline().Register("kubelet", kubelet)
	fmt.Println(in.Validate(&release.ComponentVersion{Name: "node-c", Version: release.MustParseVersion("v1.34.1"), Handler: "kubelet-v2"}))

	for _, node := range []string{"node-a", "node-b"} {
		cv := &release.ComponentVersion{Name: node, Version: release.MustParseVersion("v1.34.1"), Type: release.TypeInline, Handler: "kubelet"}
		err := in.Run(context.Background(), runner.Task{Component: node, To: cv})
		fmt.Printf("%s: %v (skipped: %t)\n", node, err, errors.Is(err, runner.ErrSkipped))
	}
	// Output:
	// components: node-c v1.34.1: validate: no inline handler registered as "kubelet-v2" (registered: kubelet)
	// node-a: runner: skipped: already at target (skipped: true)
	// drain node-b
	// upgrade node-b to v1.34.1
	// uncordon node-b
	// node-b: <nil> (skipped: false)
}

// A Manifest renders a component's manifests and applies them through an
// Applier; here a Recorder, as in a dry run. The ConfigMap that the
// previous version rendered and this one does not is pruned once the new
// version is ready.
func ExampleManifest() {
	v := release.MustParseVersion
	from := &release.ComponentVersion{Name: "metrics-server", Version: v("v0.7.2"), Type: release.TypeManifest,
		Manifests: []release.Manifest{{Name: "metrics-server.yaml", Template: `apiVersion: v1
kind: ConfigMap
metadata: {name: metrics-server-config, namespace: kube-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: metrics-server, namespace: kube-system}
spec:
  template:
    spec:
      containers: [{name: metrics-server, image: "{{ .Values.registry }}/metrics-server:{{ .Component.Version }}"}]
`}}}
	to := &release.ComponentVersion{Name: "metrics-server", Version: v("v0.8.0"), Type: release.TypeManifest,
		HealthChecks: []release.HealthCheck{{Name: "deployment-ready", Timeout: release.D(10e9), Interval: release.D(1e6)}},
		Manifests: []release.Manifest{{Name: "metrics-server-v0.8.yaml", Template: `apiVersion: v1
kind: Namespace
metadata: {name: kube-system}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics-server
  namespace: kube-system
  annotations: {upgraded-from: "{{ .From }}", hop: "{{ .Hop }}"}
spec:
  template:
    spec:
      containers: [{name: metrics-server, image: "{{ .Values.registry }}/metrics-server:{{ .Component.Version }}"}]
`}}}
	rec := components.NewRecorder().ReadyAfter("deployment-ready", 2) // ready on the third poll
	m := components.NewManifest(rec, components.WithValues(map[string]any{"registry": "mirror.local"}))
	t := runner.Task{
		Hop:       &runner.HopPlan{Hop: path.Hop{From: v("v26.06"), To: v("v26.09")}},
		Component: "metrics-server", From: from, To: to,
	}

	objs, err := m.Render(t)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(objs[1].YAML)
	// The cluster before the hop: v0.7.2 applied, and its inventory kept.
	if err := m.Run(context.Background(), runner.Task{Component: "metrics-server", To: from}); err != nil {
		fmt.Println(err)
		return
	}
	before := len(rec.Actions())
	if err := m.Run(context.Background(), t); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range rec.Actions()[before:] {
		fmt.Println(a)
	}
	fmt.Println("polls:", rec.Polls("deployment-ready"))

	// A missing value is an error, not an empty string.
	_, err = components.NewManifest(rec).Render(t)
	fmt.Println(errors.Is(err, components.ErrTemplate))
	// Output:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   name: metrics-server
	//   namespace: kube-system
	//   annotations: {upgraded-from: "v0.7.2", hop: "v26.06 -> v26.09"}
	// spec:
	//   template:
	//     spec:
	//       containers: [{name: metrics-server, image: "mirror.local/metrics-server:v0.8.0"}]
	// metrics-server v0.8.0: apply Namespace kube-system
	// metrics-server v0.8.0: apply Deployment kube-system/metrics-server
	// metrics-server v0.7.2: delete ConfigMap kube-system/metrics-server-config
	// polls: 3
	// true
}

// A Dir writes each object to its own file, named after the object, for a
// GitOps review or an offline site.
func ExampleDir() {
	root, err := os.MkdirTemp("", "hopdag-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)

	cv := &release.ComponentVersion{Name: "provider", Version: release.MustParseVersion("v1.5.0"), Type: release.TypeManifest,
		Manifests: []release.Manifest{{Name: "provider.yaml", Template: `apiVersion: v1
kind: Namespace
metadata: {name: cluster-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bke-provider, namespace: cluster-system, labels: {version: "{{ .Component.Version }}"}}
`}}}
	m := components.NewManifest(components.NewDir(root))
	if err := m.Run(context.Background(), runner.Task{Component: "provider", To: cv}); err != nil {
		fmt.Println(err)
		return
	}
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && e.Name() == ".hopdag" {
			return filepath.SkipDir // the inventories
		}
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(root, p)
			data, _ := os.ReadFile(p)
			fmt.Printf("%s:\n%s", filepath.ToSlash(rel), data)
		}
		return err
	})
	// Output:
	// _cluster/namespace_cluster-system.yaml:
	// apiVersion: v1
	// kind: Namespace
	// metadata: {name: cluster-system, labels: {app.kubernetes.io/managed-by: hopdag, hopdag.io/component: provider, hopdag.io/instance: default}}
	// cluster-system/deployment.apps_bke-provider.yaml:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata: {name: bke-provider, namespace: cluster-system, labels: {version: "v1.5.0", app.kubernetes.io/managed-by: hopdag, hopdag.io/component: provider, hopdag.io/instance: default}}
}

// Two installations (instances ia and ib) that render the same object do
// not share it: the second is refused, naming the owner and the fixes,
// since the prune of either would delete it from under the other.
// WithTakeOver takes it over, and the report says from whom.
func ExampleWithTakeOver() {
	cv := &release.ComponentVersion{Name: "x", Version: release.MustParseVersion("v1.0"), Type: release.TypeManifest,
		Manifests: []release.Manifest{{Name: "x.yaml", Template: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared-cm}\n"}}}
	task := runner.Task{Component: "x", To: cv}
	ctx := context.Background()

	rec := components.NewRecorder()
	_ = components.NewManifest(rec, components.WithInstance("ia")).Run(ctx, task)
	err := components.NewManifest(rec, components.WithInstance("ib")).Run(ctx, task)
	fmt.Println(errors.Is(err, components.ErrOwned), runner.IsPermanent(err))
	fmt.Println(err)

	taker := components.NewRecorder(components.WithTakeOver(true),
		components.WithReporter(func(a components.Action) { fmt.Println(a) }))
	_ = components.NewManifest(taker, components.WithInstance("ia")).Run(ctx, task)
	_ = components.NewManifest(taker, components.WithInstance("ib")).Run(ctx, task)
	// Output:
	// true true
	// components: x v1.0: apply ConfigMap default/shared-cm: refused: it belongs to component "x" of instance "ia" (its hopdag.io/component and hopdag.io/instance labels), not to "x" of "ib", and the prune of either would delete it from under the other; give both installations the same instance (components.WithInstance; hopdag run --instance), or remove the object from one of the two components, or take it over with components.WithTakeOver (the old owner's prune then leaves it)
	// x v1.0: apply ConfigMap default/shared-cm
	// x v1.0: apply ConfigMap default/shared-cm (taken over from component "x" of instance "ia")
}
