// Package helm runs components of type helm (release.TypeHelm) with the
// Helm SDK (helm.sh/helm/v4): a [Runner] is a runner.Runner, a
// runner.Validator, a runner.Rollbacker and a runner.RollbackValidator.
//
// A component's chart is its ComponentVersion.Helm: a chart directory
// or archive relative to the catalog's root ([WithChartRoot]), a chart
// name in a repository (Repo), or an oci:// reference, remote ones
// pinned by Version, and an archive's content by Digest (the SHA-256 of
// the .tgz: an OCI chart's layer digest). Its values are YAML rendered with the manifest
// runner's template data (.Component.Name, .Component.Version,
// .Component.Params, .From, .Hop, .Values from [WithValues]).
//
// Run is `helm upgrade --install`: an install when the release does not
// exist, an upgrade otherwise, with the component's timeout (5m when it
// sets none) and Helm 4's kstatus wait (the watcher strategy: the same
// readiness rules as the server-side-apply applier, sigs.k8s.io
// cli-utils' kstatus). A failure is an error carrying Helm's message;
// Helm keeps the release's history (Secrets in its namespace). Rollback
// is `helm rollback` to the previous revision, or `helm uninstall` for a
// component the hop installed (no from-version). Validate loads the chart
// at plan time, so a chart reference that does not resolve fails before
// anything runs (a remote chart is downloaded into Helm's cache).
//
// Why Helm 4 (v4.3.1) and not 3 (v3.22.0): it builds against the same
// Kubernetes libraries as the kube module (k8s.io v0.37, controller-runtime
// v0.25), its default wait is kstatus-based, and it applies server-side;
// Helm 3 polls with its own readiness rules and gets bug fixes only.
//
// A Runner is safe for concurrent use: each call builds its own Helm
// action configuration.
package helm
