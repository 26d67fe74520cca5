package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UpgradePath holds the rules of which version may upgrade to which on one
// track. Its spec is the catalog's `kind: UpgradePath` spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=upath,categories=hopdag
// +kubebuilder:printcolumn:name="Track",type=string,JSONPath=`.spec.track`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type UpgradePath struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec UpgradePathSpec `json:"spec"`
}

// UpgradePathSpec mirrors release.UpgradePath.
type UpgradePathSpec struct {
	// Track is the track whose releases the rules upgrade ("" is the
	// default track).
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]*$`
	Track string `json:"track,omitempty"`
	// +listType=atomic
	Rules []Rule `json:"rules"`
	// +optional
	// +listType=atomic
	Versions []VersionInfo `json:"versions,omitempty"`
}

// Rule mirrors release.Rule. From is an exact version or a constraint.
type Rule struct {
	From string  `json:"from"`
	To   Version `json:"to"`
	// +optional
	Blocked string `json:"blocked,omitempty"`
	// +optional
	Deprecated string `json:"deprecated,omitempty"`
	// +optional
	// +listType=atomic
	Risks []Risk `json:"risks,omitempty"`
	// +optional
	// +listType=atomic
	PreChecks []Check `json:"preChecks,omitempty"`
	// +optional
	// +listType=atomic
	PostChecks []Check `json:"postChecks,omitempty"`
	// RuleControl: the hop's gate and failure policy, written at the
	// rule's level as in the catalog.
	RuleControl `json:",inline"`
}

// RuleControl mirrors release.RuleControl.
type RuleControl struct {
	// Gate holds the hop until an operator approves it.
	// +optional
	Gate *Gate `json:"gate,omitempty"`
	// OnFailure is the hop's failure policy: "" (the executor's) or
	// "rollback".
	// +optional
	// +kubebuilder:validation:Enum="";rollback
	OnFailure string `json:"onFailure,omitempty"`
}

// Risk mirrors release.Risk.
type Risk struct {
	Name string `json:"name"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	URL string `json:"url,omitempty"`
}

// Check mirrors release.Check.
type Check struct {
	Name string `json:"name"`
	// +optional
	Required bool `json:"required,omitempty"`
}

// VersionInfo mirrors release.VersionInfo.
type VersionInfo struct {
	Version Version `json:"version"`
	// +optional
	Installable *bool `json:"installable,omitempty"`
	// +optional
	Deprecated string `json:"deprecated,omitempty"`
	// Channels lists the channels the version belongs to.
	// +optional
	// +listType=atomic
	Channels []string `json:"channels,omitempty"`
}

// UpgradePathList is a list of UpgradePaths.
//
// +kubebuilder:object:root=true
type UpgradePathList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpgradePath `json:"items"`
}
