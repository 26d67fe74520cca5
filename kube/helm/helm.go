package helm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/registry"
	"k8s.io/client-go/rest"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// DefaultTimeout bounds an install, upgrade or rollback of a component
// that sets no timeout.
const DefaultTimeout = 5 * time.Minute

// Errors of the package.
var (
	// ErrNoChart is matched by the error for a helm component without a
	// chart (no spec.helm.chart).
	ErrNoChart = errors.New("helm: component has no chart (set spec.helm.chart)")
	// ErrReleaseMoved is matched by the error for a helm component whose
	// release (namespace or name) is not its from-version's: hopdag does
	// not move a release (ValidateHop refuses it at plan time, Run before
	// it changes anything).
	ErrReleaseMoved = errors.New("helm: release moved")
)

// Runner installs, upgrades and rolls back Helm releases on one cluster.
type Runner struct {
	rest     *rest.Config
	root     string
	values   map[string]any
	settings *cli.EnvSettings
	logger   *slog.Logger
	plain    bool
}

// Option configures New.
type Option func(*Runner)

// WithChartRoot is the directory local chart paths are relative to (the
// catalog's root); the working directory by default.
func WithChartRoot(dir string) Option { return func(r *Runner) { r.root = dir } }

// WithValues sets what values templates see as .Values.
func WithValues(v map[string]any) Option { return func(r *Runner) { r.values = maps.Clone(v) } }

// WithSettings sets Helm's environment (cache and repository config
// directories, registry config); cli.New() by default.
func WithSettings(s *cli.EnvSettings) Option { return func(r *Runner) { r.settings = s } }

// WithPlainHTTP fetches oci:// and repository charts over plain HTTP, not
// HTTPS: for a registry on localhost or a trusted network only (Helm's
// --plain-http).
func WithPlainHTTP() Option { return func(r *Runner) { r.plain = true } }

// WithLogger sets the logger given to Helm; nil discards.
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.logger = l } }

// New returns a Runner for the cluster rc reaches.
func New(rc *rest.Config, opts ...Option) *Runner {
	r := &Runner{rest: rc}
	for _, o := range opts {
		o(r)
	}
	if r.settings == nil {
		r.settings = cli.New()
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// chartRef is cv's chart, or an error.
func chartRef(cv *release.ComponentVersion) (*release.HelmChart, error) {
	if cv == nil || cv.Helm == nil || cv.Helm.Chart == "" {
		name := ""
		if cv != nil {
			name = cv.Key() + ": "
		}
		return nil, fmt.Errorf("%s%w", name, ErrNoChart)
	}
	return cv.Helm, nil
}

func releaseName(cv *release.ComponentVersion) string {
	if cv.Helm.Release != "" {
		return cv.Helm.Release
	}
	return cv.Name
}

func namespace(cv *release.ComponentVersion) string {
	if cv.Helm.Namespace != "" {
		return cv.Helm.Namespace
	}
	return "default"
}

// load locates and loads cv's chart: a local path under the root, or a
// remote chart through Helm's cache, and checks it against the catalog's
// pins (Version, Digest).
func (r *Runner) load(cv *release.ComponentVersion) (*chart.Chart, error) {
	h, err := chartRef(cv)
	if err != nil {
		return nil, err
	}
	path, manifest, verified := h.Chart, "", false
	if h.Repo == "" && !isOCI(h.Chart) {
		if !filepath.IsAbs(path) {
			path = filepath.Join(r.root, path)
		}
	} else {
		// An Install action locates charts (its ChartPathOptions hold the
		// registry client an oci:// reference needs); nothing is installed.
		in := action.NewInstall(action.NewConfiguration())
		in.RepoURL, in.Version, in.PlainHTTP = h.Repo, h.Version, r.plain
		ref := h.Chart
		if isOCI(h.Chart) {
			rc, err := r.registryClient()
			if err != nil {
				return nil, fmt.Errorf("helm: %s: registry client: %w", cv.Key(), err)
			}
			in.SetRegistryClient(rc)
			if h.Digest != "" {
				if ref, manifest, verified, err = pinManifest(rc, h); err != nil {
					return nil, fmt.Errorf("helm: %s: %w", cv.Key(), err)
				}
				if verified {
					// Pulled by the manifest digest: the registry client
					// checks what it fetches against it. load checks the
					// version below.
					in.Version = ""
				}
			}
		}
		if path, err = in.LocateChart(ref, r.settings); err != nil {
			return nil, fmt.Errorf("helm: %s: locate chart %s %s: %w", cv.Key(), h.Chart, h.Version, err)
		}
	}
	if !verified {
		if err := checkDigest(cv, path, manifest); err != nil {
			return nil, err
		}
	}
	c, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("helm: %s: load chart %s: %w", cv.Key(), path, err)
	}
	if h.Version != "" && c.Metadata.Version != h.Version {
		return nil, fmt.Errorf("helm: %s: chart %s is version %s, the catalog pins %s", cv.Key(), h.Chart, c.Metadata.Version, h.Version)
	}
	return c, nil
}

func isOCI(ref string) bool { return strings.HasPrefix(ref, "oci://") }

// registryClient is a client for oci:// charts, with Helm's registry
// credentials.
func (r *Runner) registryClient() (*registry.Client, error) {
	opts := []registry.ClientOption{registry.ClientOptCredentialsFile(r.settings.RegistryConfig)}
	if r.plain {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	return registry.NewClient(opts...)
}

// config is a Helm action configuration for cv's namespace.
func (r *Runner) config(cv *release.ComponentVersion) (*action.Configuration, error) {
	cfg := action.NewConfiguration()
	cfg.SetLogger(r.logger.Handler())
	if err := cfg.Init(newGetter(r.rest, namespace(cv)), namespace(cv), "secret"); err != nil {
		return nil, fmt.Errorf("helm: %s: %w", cv.Key(), err)
	}
	return cfg, nil
}

// valuesOf renders cv's values template as the manifest and exec runners
// render theirs (components.RenderText: the same data, sprig functions,
// missing keys errors) and parses it as YAML.
func (r *Runner) valuesOf(t runner.Task, cv *release.ComponentVersion) (map[string]any, error) {
	out := map[string]any{}
	if cv.Helm.Values == "" {
		return out, nil
	}
	t.To = cv
	text, err := components.RenderText(cv.Key()+" values", cv.Helm.Values, t, r.values)
	if err != nil {
		return nil, fmt.Errorf("helm: %s: values: %w", cv.Key(), err)
	}
	if err := yaml.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("helm: %s: values do not parse as YAML: %w", cv.Key(), err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// taskLogger is t's logger, or the Runner's.
func (r *Runner) taskLogger(t runner.Task) *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return r.logger
}

func timeoutOf(cv *release.ComponentVersion) time.Duration {
	if cv.Timeout.Duration > 0 {
		return cv.Timeout.Duration
	}
	return DefaultTimeout
}

// Run installs or upgrades t.To's release (helm upgrade --install).
func (r *Runner) Run(ctx context.Context, t runner.Task) error {
	cv := t.To
	if _, err := chartRef(cv); err != nil {
		return runner.Permanent(err)
	}
	if err := moved(t.From, cv); err != nil {
		return runner.Permanent(err)
	}
	ch, err := r.load(cv)
	if err != nil {
		return err
	}
	vals, err := r.valuesOf(t, cv)
	if err != nil {
		return runner.Permanent(err)
	}
	cfg, err := r.config(cv)
	if err != nil {
		return err
	}
	name, ns := releaseName(cv), namespace(cv)
	hs, err := history(cfg, name)
	if err != nil {
		return fmt.Errorf("helm: %s: history of release %s/%s: %w", cv.Key(), ns, name, err)
	}
	if err := clearPending(cfg, hs, r.taskLogger(t)); err != nil {
		return fmt.Errorf("helm: %s: release %s/%s: %w", cv.Key(), ns, name, err)
	}
	labels := map[string]string{VersionLabel: versionLabel(cv.Version)}
	if len(hs) == 0 {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = name, ns, true
		in.Timeout, in.WaitStrategy = timeoutOf(cv), kube.StatusWatcherStrategy
		in.Labels, in.Description = labels, "hopdag: install "+cv.Key()
		if _, err := in.RunWithContext(ctx, ch, vals); err != nil {
			return fmt.Errorf("helm: %s: install release %s/%s: %w%s", cv.Key(), ns, name, err, waited(ctx, cfg, name))
		}
		return nil
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.Timeout, up.WaitStrategy = ns, timeoutOf(cv), kube.StatusWatcherStrategy
	up.Labels, up.Description = labels, "hopdag: upgrade to "+cv.Key()
	if _, err := up.RunWithContext(ctx, name, ch, vals); err != nil {
		return fmt.Errorf("helm: %s: upgrade release %s/%s: %w%s", cv.Key(), ns, name, err, waited(ctx, cfg, name))
	}
	return nil
}

// waited is "; " and what was not ready (unready) when ctx's deadline
// passed, as it does when Helm's wait outlasts the component's timeout;
// else "" (a cancelled run stops without reading more).
func waited(ctx context.Context, cfg *action.Configuration, name string) string {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ""
	}
	if s := unready(cfg, name); s != "" {
		return "; " + s
	}
	return ""
}

// Validate loads cv's chart, so that a chart reference that does not
// resolve fails at plan time, and renders its values.
func (r *Runner) Validate(cv *release.ComponentVersion) error {
	if _, err := r.load(cv); err != nil {
		return err
	}
	_, err := r.valuesOf(runner.Task{To: cv}, cv)
	return err
}

// ValidateRollback accepts every component with a chart: Helm keeps the
// history a rollback needs.
func (r *Runner) ValidateRollback(cv *release.ComponentVersion) error {
	_, err := chartRef(cv)
	return err
}
