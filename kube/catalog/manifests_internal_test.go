package catalog

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

func TestManifestFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1alpha1.ComponentVersionSpec
		want []string
	}{
		{"none", v1alpha1.ComponentVersionSpec{Handler: "a"}, nil},
		{"inline only", v1alpha1.ComponentVersionSpec{Manifests: []v1alpha1.Manifest{{Template: "x"}}}, nil},
		{"spec.manifests, cleaned", v1alpha1.ComponentVersionSpec{Manifests: []v1alpha1.Manifest{{File: "./m/a.yaml"}, {Template: "x"}, {File: "m//b.yaml"}}}, []string{"m/a.yaml", "m/b.yaml"}},
		{"phases", v1alpha1.ComponentVersionSpec{Lifecycle: v1alpha1.Lifecycle{Phases: []v1alpha1.LifecyclePhase{
			{Name: "drain", Handler: "drain"},
			{Name: "rollout", Manifests: []v1alpha1.Manifest{{File: "m/rollout.yaml"}, {Template: "x"}}},
			{Name: "verify", Manifests: []v1alpha1.Manifest{{File: "m/verify.yaml"}}},
		}}}, []string{"m/rollout.yaml", "m/verify.yaml"}},
		{"spec.manifests first, then phases", v1alpha1.ComponentVersionSpec{
			Manifests: []v1alpha1.Manifest{{File: "m/z.yaml"}},
			Lifecycle: v1alpha1.Lifecycle{Phases: []v1alpha1.LifecyclePhase{{Name: "p", Manifests: []v1alpha1.Manifest{{File: "m/a.yaml"}}}}},
		}, []string{"m/z.yaml", "m/a.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, manifestFiles(&tc.spec), "manifestFiles(%+v)", tc.spec)
		})
	}
}
