package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is hopdag.io/v1alpha1, the group and version of every kind
// here and the apiVersion of catalog documents (release.APIVersion).
var GroupVersion = schema.GroupVersion{Group: "hopdag.io", Version: "v1alpha1"}

// AddToScheme adds the kinds of this package to s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ClusterVersion{}, &ClusterVersionList{},
		&Release{}, &ReleaseList{},
		&ComponentVersion{}, &ComponentVersionList{},
		&UpgradePath{}, &UpgradePathList{},
		&UpgradeRollout{}, &UpgradeRolloutList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
