package release

// TypeHelm is the component type of a Helm chart (package
// github.com/hopdag/hopdag/kube/helm runs it).
const TypeHelm = "helm"

// HelmChart is the chart a component of type helm installs or upgrades
// to, and its values.
type HelmChart struct {
	// Chart is an OCI reference ("oci://registry/charts/app"), a chart
	// name in the repository Repo, or a directory or archive relative to
	// the catalog's root ("charts/app").
	Chart string `json:"chart" yaml:"chart"`
	// Repo is the chart repository's URL when Chart is a name in it.
	Repo string `json:"repo,omitempty" yaml:"repo,omitempty"`
	// Version pins the chart's version (required for a remote chart).
	Version string `json:"version,omitempty" yaml:"version,omitempty"`
	// Digest, when set, pins the chart: "sha256:" and the hex SHA-256 of
	// the .tgz; for an OCI chart, the manifest digest `helm push` prints
	// (the chart is then pulled by it), or the chart layer's digest.
	Digest string `json:"digest,omitempty" yaml:"digest,omitempty"`
	// Release is the Helm release's name; the component's name when empty.
	Release string `json:"release,omitempty" yaml:"release,omitempty"`
	// Namespace is the release's namespace; "default" when empty.
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// Values is YAML, a text/template rendered with the manifest
	// runner's template data (.Component, .From, .Hop, .Values).
	Values string `json:"values,omitempty" yaml:"values,omitempty"`
}

func validateHelm(cv *ComponentVersion, at func(path ...any) Problem, ps *problems) {
	// A type helm without spec.helm is left to the registered runner
	// (kube/helm refuses it at plan time): helm may be a user's own type.
	if cv.Helm == nil {
		return
	}
	switch {
	case cv.Helm.Chart == "":
		ps.add(at("type").with("a helm component needs a chart", "set spec.helm.chart to an oci:// reference, a repository chart name (with repo) or a path relative to the catalog root"))
	case (cv.Helm.Repo != "" || isOCI(cv.Helm.Chart)) && cv.Helm.Version == "":
		ps.add(at("helm").with("a remote chart needs a pinned version", "set spec.helm.version, e.g. 1.4.2"))
	}
}

func isOCI(ref string) bool { return len(ref) > 6 && ref[:6] == "oci://" }
