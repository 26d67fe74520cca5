package release

import (
	"path"
	"slices"
)

// Component types the project ships runners for. Users may register others.
const (
	TypeInline   = "inline"   // a Go function registered by handler name
	TypeManifest = "manifest" // Kubernetes objects applied through an Applier
	TypeExec     = "exec"     // a command run as a child process
)

// BeforeAll is the only legal value of ComponentVersion.Before.
const BeforeAll = "all"

// ComponentVersion is one component at one version, and how to upgrade to it.
// It is the spec of a `kind: ComponentVersion` document.
type ComponentVersion struct {
	// Name is the component's name, shared by all its versions ("etcd").
	Name string `json:"name" yaml:"name"`
	// Version is this component version ("v3.5.21").
	Version Version `json:"version" yaml:"version"`
	// Type selects the runner: inline, manifest, exec, or a registered name.
	// When empty it is inferred from which of handler, manifests and command
	// is set.
	Type string `json:"type,omitempty" yaml:"type,omitempty"`
	// Dependencies are names of components of the same release that must be
	// upgraded before this one.
	Dependencies []string `json:"dependencies,omitempty" yaml:"dependencies,omitempty"`
	// Before, when "all", runs this component before every other component of
	// its release (openFuyao's pre-upgrade-resources).
	Before string `json:"before,omitempty" yaml:"before,omitempty"`
	// Timeout bounds one attempt; zero means the executor's default.
	Timeout Duration `json:"timeout,omitzero" yaml:"timeout,omitempty"`
	// Retries sets how failed attempts are retried; nil means the executor's default.
	Retries *Retries `json:"retries,omitempty" yaml:"retries,omitempty"`
	// HealthChecks are polled after the upgrade until ready or timed out.
	HealthChecks []HealthCheck `json:"healthChecks,omitempty" yaml:"healthChecks,omitempty"`
	// Group names a concurrency group ("workers"); the executor may cap how
	// many components of a group run at once.
	Group string `json:"group,omitempty" yaml:"group,omitempty"`
	// ExpectedDuration is the planning estimate used for critical paths.
	ExpectedDuration Duration `json:"expectedDuration,omitzero" yaml:"expectedDuration,omitempty"`
	// Params are free-form values for the runner and for manifest
	// templates, strings (a catalog quotes "false" or "3").
	Params map[string]string `json:"params,omitempty" yaml:"params,omitempty"`
	// Handler names the inline handler (type inline).
	Handler string `json:"handler,omitempty" yaml:"handler,omitempty"`
	// Command is the command to run (type exec).
	Command *Command `json:"command,omitempty" yaml:"command,omitempty"`
	// Manifests are the templates to render and apply (type manifest).
	Manifests []Manifest `json:"manifests,omitempty" yaml:"manifests,omitempty"`
	// Helm is the chart of a component of type helm (helm.go).
	Helm *HelmChart `json:"helm,omitempty" yaml:"helm,omitempty"`
	// Lifecycle: phases, gate and rollback (lifecycle.go).
	Lifecycle `json:",inline" yaml:",inline"`

	// Source is where the document was loaded from.
	Source Source `json:"-" yaml:"-"`
}

// RunsFirst reports whether the component has `before: all`.
func (c *ComponentVersion) RunsFirst() bool { return c.Before == BeforeAll }

// ManifestFiles returns the files cv's manifests name, spec.manifests
// first and then each lifecycle phase's, cleaned, each once, in order.
func (c *ComponentVersion) ManifestFiles() []string {
	var files []string
	add := func(ms []Manifest) {
		for _, m := range ms {
			if f := path.Clean(m.File); m.File != "" && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	add(c.Manifests)
	for _, p := range c.Phases {
		add(p.Manifests)
	}
	return files
}

// Key is "name@version", as used in messages.
func (c *ComponentVersion) Key() string { return c.Name + "@" + c.Version.Original() }

// Retries says how often and how fast a failed attempt is retried.
type Retries struct {
	// Attempts is the total number of attempts, including the first (>= 1);
	// zero, in a value built in code or when a catalog's retries block has
	// no attempts, means the executor's default. A catalog that writes
	// attempts: 0 is refused.
	Attempts int `json:"attempts,omitempty" yaml:"attempts,omitempty"`
	// Backoff is the wait before the second attempt; it doubles per attempt.
	Backoff Duration `json:"backoff,omitzero" yaml:"backoff,omitempty"`
	// MaxBackoff caps the wait between attempts; zero means no cap.
	MaxBackoff Duration `json:"maxBackoff,omitzero" yaml:"maxBackoff,omitempty"`
}

// HealthCheck is a readiness probe polled after a component is upgraded.
type HealthCheck struct {
	Name     string            `json:"name" yaml:"name"`
	Timeout  Duration          `json:"timeout,omitzero" yaml:"timeout,omitempty"`
	Interval Duration          `json:"interval,omitzero" yaml:"interval,omitempty"`
	Params   map[string]string `json:"params,omitempty" yaml:"params,omitempty"`
}

// Command is the child process an exec component runs. Args is an argv, never
// a shell string; Args[0] is the program.
type Command struct {
	Args []string          `json:"args" yaml:"args"`
	Env  map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	Dir  string            `json:"dir,omitempty" yaml:"dir,omitempty"`
}

// Manifest is one template of Kubernetes objects: inline text, or a file
// whose path is relative to the catalog's root. Load reads a file into
// Template, so a loaded catalog needs no file system to render.
type Manifest struct {
	// Name identifies the manifest in messages; it defaults to File, or to
	// "inline-N" for the N-th inline manifest.
	Name     string `json:"name,omitempty" yaml:"name,omitempty"`
	File     string `json:"file,omitempty" yaml:"file,omitempty"`
	Template string `json:"template,omitempty" yaml:"template,omitempty"`
}

// Source is the file and line a document came from ("" and 0 when built in code).
type Source struct {
	File string `json:"file,omitempty" yaml:"file,omitempty"`
	Line int    `json:"line,omitempty" yaml:"line,omitempty"`
}

// String is "file:line", or "" when unknown.
func (s Source) String() string {
	if s.File == "" {
		return ""
	}
	return s.File + ":" + itoa(s.Line)
}
