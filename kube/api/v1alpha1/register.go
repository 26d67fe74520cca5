package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is hopdag.io/v1alpha1, the group and version of every kind
// here and the apiVersion of catalog documents (release.APIVersion).
var GroupVersion = schema.GroupVersion{Group: "hopdag.io", Version: "v1alpha1"}

var schemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

// AddToScheme adds the kinds of this package to s.
func AddToScheme(s *runtime.Scheme) error { return schemeBuilder.AddToScheme(s) }

func init() {
	schemeBuilder.Register(&ClusterVersion{}, &ClusterVersionList{},
		&Release{}, &ReleaseList{},
		&ComponentVersion{}, &ComponentVersionList{},
		&UpgradePath{}, &UpgradePathList{})
}
