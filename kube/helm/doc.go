// Package helm runs components of type helm (release.TypeHelm) with the
// Helm SDK (helm.sh/helm/v4): a [Runner] is a runner.Runner, a
// runner.Validator, a runner.HopValidator, a runner.Rollbacker and a
// runner.RollbackValidator.
//
// A component's chart is its ComponentVersion.Helm: a chart directory
// or archive relative to the catalog's root ([WithChartRoot]), a chart
// name in a repository (Repo), or an oci:// reference, remote ones
// pinned by Version. Digest pins the chart's content: for an oci://
// chart, the manifest digest `helm push` prints ("Digest: sha256:..."),
// and the chart is then pulled by that digest (the chart layer's digest,
// the SHA-256 of the .tgz, is accepted too); for an archive or a
// repository chart, the SHA-256 of the .tgz (index.yaml's digest). A
// mismatch names the digests the chart has and which one is which.
//
// Its values are YAML rendered as the manifest and exec runners render
// their templates (components.RenderText): .Component.Name,
// .Component.Version, .Component.Params, .From, .Hop, .Values from
// [WithValues], the sprig functions of components.RenderText (slim-sprig's:
// no random, key or certificate generators) and Helm's toYaml and required
// (no env or expandenv), and a missing key or a nil value is an error.
//
// Run is `helm upgrade --install`: an install when the release does not
// exist, an upgrade otherwise, with the component's timeout (5m when it
// sets none) and Helm 4's kstatus wait (the watcher strategy: the same
// readiness rules as the server-side-apply applier, sigs.k8s.io
// cli-utils' kstatus). A failure is an error carrying Helm's message;
// one whose timeout ended the wait also names each object of the release
// that is not ready, with its kstatus status and message ("not ready:
// Deployment.apps apps/app: InProgress: Replicas: 0/1"). Helm keeps the
// release's history (Secrets in its namespace). Every revision Run
// writes carries the release label [VersionLabel]
// (hopdag.io/version) with the component version it installs, and a
// description that names it (see `helm history`).
//
// Rollback puts the release back at the task's from-version: `helm
// rollback` to the newest deployed revision labelled with that version,
// not to the previous revision, so that a rollback run again (resumed
// after a crash or Ctrl-C) changes nothing, a whole-run rollback over
// several hops ends at the run's starting version, and an upgrade that
// failed before Helm wrote a revision is not rolled back past its
// from-version. It does nothing when the last revision is already that
// version and deployed. For a release whose older revisions carry no
// label (made before labels), when no revision has the from-version's
// label and the labelled revisions all follow the unlabelled ones, the
// newest deployed unlabelled revision is where labelling began, so the
// from-version: Rollback labels it and rolls back to it. Otherwise it
// fails with the revisions listed, to roll back by hand. (A `helm
// upgrade` by hand copies the last revision's labels: its revision counts
// as the version it was made on.) A component the hop installed (no from-version, or one of
// another type) is uninstalled (`helm uninstall`; a release already gone
// is fine). Helm's rollback takes no context: Rollback does not start one
// once ctx is done, and one that finished reports success even when ctx
// was cancelled meanwhile.
//
// A process killed during Helm's wait leaves the release's last revision
// pending (pending-install, pending-upgrade, pending-rollback), and Helm
// refuses every later operation ("another operation is in progress").
// Run and Rollback mark such a revision failed, log it, and proceed. That
// is safe because hopdag runs a run's components under its state lock
// (package state: one lease holder at a time), so no other hopdag
// operation on the release is running; a `helm` command run by hand at
// the same time is not excluded.
//
// Validate loads the chart at plan time, so a chart reference that does
// not resolve fails before anything runs (a remote chart is downloaded
// into Helm's cache), and renders its values.
//
// A release is its namespace (default when spec.helm.namespace is empty)
// and name (the component's when spec.helm.release is empty), where Helm
// keeps its history. hopdag does not move a release: a component version
// whose release is not its from-version's (a catalog that adds
// `namespace: apps` in a later version moves it out of default) would be
// installed a second time beside the old release, and its rollback could
// not find the from-version. ValidateHop refuses it at plan time, and Run
// before it changes anything ([ErrReleaseMoved]), naming both versions
// and both releases. To move one, ship it as a new component (another
// name: the hop installs it; the old component's release stays until it
// is uninstalled, by hand or by a component of the hop). Rollback of such
// a task has nothing to undo while the new release does not exist, and
// leaves one that does as it is, saying how to remove it.
//
// Why Helm 4 (v4.3.1) and not 3 (v3.22.0): it builds against the same
// Kubernetes libraries as the kube module (k8s.io v0.37, controller-runtime
// v0.25), its default wait is kstatus-based, and it applies server-side;
// Helm 3 polls with its own readiness rules and gets bug fixes only.
//
// A Runner is safe for concurrent use: each call builds its own Helm
// action configuration.
package helm
