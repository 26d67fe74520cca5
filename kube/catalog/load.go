package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing/fstest"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/release"
)

// Option configures Load and Objects.Catalog.
type Option func(*options)

type options struct {
	manifests fs.FS
}

// WithManifests reads the files that ComponentVersions name in
// spec.manifests[].file and spec.phases[].manifests[].file from fsys
// (paths relative to its root, as in a catalog directory), and finds the
// local Helm charts that spec.helm.chart names there.
func WithManifests(fsys fs.FS) Option { return func(o *options) { o.manifests = fsys } }

// Objects are the catalog objects of one namespace.
type Objects struct {
	Releases     []v1alpha1.Release
	Components   []v1alpha1.ComponentVersion
	UpgradePaths []v1alpha1.UpgradePath
}

// List reads the catalog objects of namespace through c.
func List(ctx context.Context, c client.Reader, namespace string) (*Objects, error) {
	return list(ctx, c, namespace)
}

// list is List, with opts added to each list (UnsafeDisableDeepCopy for
// a reader whose objects are only read).
func list(ctx context.Context, c client.Reader, namespace string, opts ...client.ListOption) (*Objects, error) {
	var (
		rs  v1alpha1.ReleaseList
		cvs v1alpha1.ComponentVersionList
		ps  v1alpha1.UpgradePathList
	)
	for _, l := range []client.ObjectList{&rs, &cvs, &ps} {
		if err := c.List(ctx, l, append(opts, client.InNamespace(namespace))...); err != nil {
			return nil, fmt.Errorf("catalog: listing %T in namespace %s: %w", l, namespace, err)
		}
	}
	return &Objects{Releases: rs.Items, Components: cvs.Items, UpgradePaths: ps.Items}, nil
}

// Load lists the catalog objects of namespace and builds the catalog (see
// Objects.Catalog).
func Load(ctx context.Context, c client.Reader, namespace string, opts ...Option) (*release.Catalog, error) {
	objs, err := List(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	return objs.Catalog(opts...)
}

// Catalog builds and validates the catalog the objects declare. Bad input
// gives a *release.LoadError (errors.Is release.ErrInvalidCatalog) whose
// problems name objects as Kind/name.
func (o *Objects) Catalog(opts ...Option) (*release.Catalog, error) {
	var cfg options
	for _, opt := range opts {
		opt(&cfg)
	}
	fsys := fstest.MapFS{}
	add := func(kind, name string, spec any) error {
		doc := map[string]any{
			"apiVersion": release.APIVersion,
			"kind":       kind,
			"metadata":   map[string]string{"name": name},
			"spec":       spec,
		}
		data, err := json.Marshal(doc) // JSON is YAML
		if err != nil {
			return fmt.Errorf("catalog: %s/%s: %w", kind, name, err)
		}
		fsys[fileOf(kind, name)] = &fstest.MapFile{Data: data}
		return nil
	}
	for _, r := range sorted(o.Releases, func(r v1alpha1.Release) string { return r.Name }) {
		if err := add(release.KindRelease, r.Name, r.Spec); err != nil {
			return nil, err
		}
	}
	for _, cv := range sorted(o.Components, func(c v1alpha1.ComponentVersion) string { return c.Name }) {
		if err := add(release.KindComponentVersion, cv.Name, cv.Spec); err != nil {
			return nil, err
		}
		if cfg.manifests == nil {
			continue
		}
		for _, name := range manifestFiles(&cv.Spec) {
			if _, done := fsys[name]; done || !fs.ValidPath(name) {
				continue
			}
			// A file that cannot be read is left out: the loader reports it
			// at the field that names it.
			if data, err := fs.ReadFile(cfg.manifests, name); err == nil {
				fsys[name] = &fstest.MapFile{Data: data}
			}
		}
		// The loader checks that a local chart is there, a directory or
		// an archive (it reads neither): what it finds stands for it.
		if name, ok := localChart(cv.Spec.Helm); ok {
			if _, done := fsys[name]; !done {
				if fi, err := fs.Stat(cfg.manifests, name); err == nil {
					fsys[name] = &fstest.MapFile{Mode: fi.Mode().Type()}
				}
			}
		}
	}
	for _, p := range sorted(o.UpgradePaths, func(p v1alpha1.UpgradePath) string { return p.Name }) {
		if err := add(release.KindUpgradePath, p.Name, p.Spec); err != nil {
			return nil, err
		}
	}
	c, err := release.Load(fsys)
	if err != nil {
		var le *release.LoadError
		if errors.As(err, &le) {
			for i := range le.Problems {
				p := &le.Problems[i]
				if obj, ok := objectOf(p.File); ok {
					p.File, p.Line = obj, 0
				}
				p.Message = fileRef.ReplaceAllString(p.Message, "$1/$2")
				p.Fix = fileRef.ReplaceAllString(p.Fix, "$1/$2")
			}
		}
		return nil, err
	}
	relocate(c)
	return c, nil
}

// manifestFiles lists the files that a ComponentVersion names as
// manifests, cleaned: spec.manifests[].file, then
// spec.phases[].manifests[].file, in the order written.
func manifestFiles(spec *v1alpha1.ComponentVersionSpec) []string {
	var out []string
	add := func(ms []v1alpha1.Manifest) {
		for _, m := range ms {
			if m.File != "" {
				out = append(out, path.Clean(m.File))
			}
		}
	}
	add(spec.Manifests)
	for _, p := range spec.Phases {
		add(p.Manifests)
	}
	return out
}

// localChart is the cleaned path of a Helm chart in the catalog's files,
// as release.Load tells one: not oci://, not a chart of a repository, not
// absolute, inside the root.
func localChart(h *v1alpha1.HelmChart) (string, bool) {
	if h == nil || h.Chart == "" || h.Repo != "" || strings.HasPrefix(h.Chart, "oci://") || path.IsAbs(h.Chart) || filepath.IsAbs(h.Chart) {
		return "", false
	}
	name := path.Clean(filepath.ToSlash(h.Chart))
	return name, fs.ValidPath(name)
}

// fileOf is the file of an object's document: "Kind/name.yaml".
func fileOf(kind, name string) string { return kind + "/" + name + ".yaml" }

// objectOf turns the file of an object's document back into "Kind/name".
func objectOf(file string) (string, bool) {
	kind, rest, ok := strings.Cut(file, "/")
	if !ok || !strings.HasSuffix(rest, ".yaml") || strings.Contains(rest, "/") {
		return "", false
	}
	switch kind {
	case release.KindRelease, release.KindComponentVersion, release.KindUpgradePath:
		return kind + "/" + strings.TrimSuffix(rest, ".yaml"), true
	}
	return "", false
}

// fileRef matches a reference to an object's document inside a message
// ("first at ComponentVersion/etcd-a.yaml:1").
var fileRef = regexp.MustCompile(`\b(Release|ComponentVersion|UpgradePath)/([a-z0-9][-a-z0-9.]*)\.yaml(:[0-9]+)?`)

// relocate makes the catalog's Sources name objects.
func relocate(c *release.Catalog) {
	fix := func(s *release.Source) {
		if obj, ok := objectOf(s.File); ok {
			*s = release.Source{File: obj}
		}
	}
	for i := range c.Releases {
		fix(&c.Releases[i].Source)
	}
	for i := range c.Components {
		fix(&c.Components[i].Source)
	}
	for i := range c.Paths {
		fix(&c.Paths[i].Source)
		for j := range c.Paths[i].Rules {
			fix(&c.Paths[i].Rules[j].Source)
		}
	}
}

func sorted[T any](in []T, name func(T) string) []T {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	return out
}
