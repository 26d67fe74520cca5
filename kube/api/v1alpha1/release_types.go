package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Release is a product version and the component versions it ships (a
// ReleaseImage). Its spec is the catalog's `kind: Release` spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=releaseimage;ri,categories=hopdag
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Track",type=string,JSONPath=`.spec.track`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Release struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReleaseSpec `json:"spec"`
}

// ReleaseSpec mirrors release.Release.
type ReleaseSpec struct {
	// Version is the product version ("v26.06").
	Version Version `json:"version"`
	// Track is the release line ("" is the default track).
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]*$`
	Track string `json:"track,omitempty"`
	// Components lists what the release ships, in order.
	// +listType=atomic
	Components []ComponentRef `json:"components"`
	// Supports maps another track to the versions of it this release runs
	// with (a constraint such as ">= v1.33, < v1.35").
	// +optional
	Supports map[string]string `json:"supports,omitempty"`
	// Compatibility lists constraints between the release's components.
	// +optional
	// +listType=atomic
	Compatibility []Compatibility `json:"compatibility,omitempty"`
}

// ComponentRef names one component version a release ships.
type ComponentRef struct {
	Name    string  `json:"name"`
	Version Version `json:"version"`
}

// Compatibility says: when the release ships Component, it must ship
// Requires at a version that satisfies Versions (a constraint).
type Compatibility struct {
	Component string `json:"component"`
	Requires  string `json:"requires"`
	Versions  string `json:"versions"`
}

// ReleaseList is a list of Releases.
//
// +kubebuilder:object:root=true
type ReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Release `json:"items"`
}
