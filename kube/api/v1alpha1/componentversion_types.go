package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ComponentVersion is one component at one version, and how to upgrade to
// it. Its spec is the catalog's `kind: ComponentVersion` spec. Durations are
// Go durations written as strings ("90s", "10m").
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=compv,categories=hopdag
// +kubebuilder:printcolumn:name="Component",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ComponentVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ComponentVersionSpec `json:"spec"`
}

// ComponentVersionSpec mirrors release.ComponentVersion.
type ComponentVersionSpec struct {
	Name    string  `json:"name"`
	Version Version `json:"version"`
	// +optional
	Type string `json:"type,omitempty"`
	// +optional
	// +listType=atomic
	Dependencies []string `json:"dependencies,omitempty"`
	// +optional
	Before string `json:"before,omitempty"`
	// +optional
	Timeout string `json:"timeout,omitempty"`
	// +optional
	Retries *Retries `json:"retries,omitempty"`
	// +optional
	// +listType=atomic
	HealthChecks []HealthCheck `json:"healthChecks,omitempty"`
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	ExpectedDuration string `json:"expectedDuration,omitempty"`
	// +optional
	Params map[string]string `json:"params,omitempty"`
	// +optional
	Handler string `json:"handler,omitempty"`
	// +optional
	Command *Command `json:"command,omitempty"`
	// +optional
	// +listType=atomic
	Manifests []Manifest `json:"manifests,omitempty"`
	// Helm is the chart of a component of type helm.
	// +optional
	Helm *HelmChart `json:"helm,omitempty"`
	// Lifecycle: phases, gate, rollback and irreversible, written at the
	// spec's level as in the catalog.
	Lifecycle `json:",inline"`
}

// HelmChart mirrors release.HelmChart.
type HelmChart struct {
	Chart string `json:"chart"`
	// +optional
	Repo string `json:"repo,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Digest string `json:"digest,omitempty"`
	// +optional
	Release string `json:"release,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Values string `json:"values,omitempty"`
}

// Lifecycle mirrors release.Lifecycle.
type Lifecycle struct {
	// Phases, when set, run in order in place of the type's single step.
	// +optional
	// +listType=atomic
	Phases []LifecyclePhase `json:"phases,omitempty"`
	// Gate holds the component until an operator approves it.
	// +optional
	Gate *Gate `json:"gate,omitempty"`
	// Rollback is the command that undoes an exec component's upgrade.
	// +optional
	Rollback *Command `json:"rollback,omitempty"`
	// Irreversible says why the component cannot be rolled back.
	// +optional
	Irreversible string `json:"irreversible,omitempty"`
}

// LifecyclePhase mirrors release.LifecyclePhase: exactly one of Handler,
// Command and Manifests (the catalog loader checks it).
type LifecyclePhase struct {
	Name string `json:"name"`
	// +optional
	Handler string `json:"handler,omitempty"`
	// +optional
	Command *Command `json:"command,omitempty"`
	// +optional
	// +listType=atomic
	Manifests []Manifest `json:"manifests,omitempty"`
	// +optional
	Gate *Gate `json:"gate,omitempty"`
}

// Gate mirrors release.Gate. An empty gate (`gate: {}`) is a gate.
type Gate struct {
	// Reason says what the operator should look at before approving.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// Retries mirrors release.Retries.
type Retries struct {
	// Attempts is at least 1 when given (an absent value means the
	// executor's default).
	// +optional
	// +kubebuilder:validation:Minimum=1
	Attempts int `json:"attempts,omitempty"`
	// +optional
	Backoff string `json:"backoff,omitempty"`
	// +optional
	MaxBackoff string `json:"maxBackoff,omitempty"`
}

// HealthCheck mirrors release.HealthCheck.
type HealthCheck struct {
	Name string `json:"name"`
	// +optional
	Timeout string `json:"timeout,omitempty"`
	// +optional
	Interval string `json:"interval,omitempty"`
	// +optional
	Params map[string]string `json:"params,omitempty"`
}

// Command mirrors release.Command.
type Command struct {
	// +listType=atomic
	Args []string `json:"args"`
	// +optional
	Env map[string]string `json:"env,omitempty"`
	// +optional
	Dir string `json:"dir,omitempty"`
}

// Manifest mirrors release.Manifest. A catalog loaded from the cluster has
// no files: write the template inline, or give the loader the files.
type Manifest struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	File string `json:"file,omitempty"`
	// +optional
	Template string `json:"template,omitempty"`
}

// ComponentVersionList is a list of ComponentVersions.
//
// +kubebuilder:object:root=true
type ComponentVersionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ComponentVersion `json:"items"`
}
