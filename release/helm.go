package release

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/hopdag/hopdag/release/internal/yamldoc"
)

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

func validateHelm(cv *ComponentVersion, at func(path ...any) Problem, bad func(path ...any) bool, ps *problems) {
	// A type helm without spec.helm is left to the registered runner
	// (kube/helm refuses it at plan time): helm may be a user's own type.
	if cv.Helm == nil {
		return
	}
	switch {
	case bad("helm", "chart") || bad("helm", "repo") || bad("helm", "version"):
		// left zero: reported already
	case cv.Helm.Chart == "":
		ps.add(at("type").with("a helm component needs a chart", "set spec.helm.chart to an oci:// reference, a repository chart name (with repo) or a path relative to the catalog root"))
	case (cv.Helm.Repo != "" || isOCI(cv.Helm.Chart)) && cv.Helm.Version == "":
		ps.add(at("helm").with("a remote chart needs a pinned version", "set spec.helm.version, e.g. 1.4.2"))
	}
}

func isOCI(ref string) bool { return len(ref) > 6 && ref[:6] == "oci://" }

// localChart is the cleaned path of cv's chart when it is one in the
// catalog: not an oci:// reference, not a chart name in a repository, not
// an absolute path or one that leaves the catalog's root (those are where
// the Helm runner finds them, not in the catalog).
func localChart(h *HelmChart) (string, bool) {
	if h == nil || h.Chart == "" || h.Repo != "" || isOCI(h.Chart) || path.IsAbs(h.Chart) || filepath.IsAbs(h.Chart) {
		return "", false
	}
	p := path.Clean(filepath.ToSlash(h.Chart))
	return p, fs.ValidPath(p)
}

// checkCharts reports each local chart (localChart) of c that is not in
// fsys as a directory or a chart archive (.tgz), as a missing manifest
// file is: the Helm runner reads it from the catalog's root.
func checkCharts(fsys fs.FS, c *Catalog, sn *specNodes, ps *problems) {
	for i := range c.Components {
		cv := &c.Components[i]
		name, ok := localChart(cv.Helm)
		if !ok {
			continue
		}
		fi, err := fs.Stat(fsys, name)
		var msg, hint string
		switch {
		case errors.Is(err, fs.ErrNotExist):
			msg = fmt.Sprintf("helm chart %s does not exist", cv.Helm.Chart)
			hint = nearChart(fsys, name)
		case err != nil:
			msg = fmt.Sprintf("helm chart %s: %v", cv.Helm.Chart, err)
		case !fi.IsDir() && !strings.HasSuffix(name, ".tgz") && !strings.HasSuffix(name, ".tar.gz"):
			msg = fmt.Sprintf("helm chart %s is a file but not a chart archive (.tgz)", cv.Helm.Chart)
		default:
			continue
		}
		ps.add(sn.at(cv.Source, "helm", "chart").with(msg,
			hint+"write the path of the chart directory or .tgz archive relative to the catalog root, or give an oci:// reference or a chart name with repo"))
	}
}

// nearChart is "did you mean DIR/NAME? " for the chart beside the missing
// one at name whose name is closest to it (a typo), or "".
func nearChart(fsys fs.FS, name string) string {
	dir, base := path.Split(name)
	entries, err := fs.ReadDir(fsys, path.Clean(dir+"."))
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".tgz") {
			names = append(names, e.Name())
		}
	}
	best, bestDist := "", 3
	for _, n := range names {
		if d := yamldoc.EditDistance(strings.ToLower(base), strings.ToLower(n)); d < bestDist && d < len(base) && len(base) < 64 {
			best, bestDist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return "did you mean " + dir + best + "? else "
}
