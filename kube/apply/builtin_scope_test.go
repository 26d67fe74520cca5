package apply_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/discovery"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// The components package knows which built-in kinds are cluster-scoped
// from a table, for appliers that cannot ask a cluster (Recorder, Dir):
// every cluster-scoped kind a real API server serves that can be stored
// (created and listed) renders without a namespace through a Recorder, and
// a namespaced one gets the default. A kind added to Kubernetes and
// missing from the table fails here.
func TestBuiltinScopeTableMatchesServer(t *testing.T) {
	needCluster(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	lists, err := dc.ServerPreferredResources()
	require.NoError(t, err)
	var missing []string
	checked := 0
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "create") || !slices.Contains(r.Verbs, "list") {
				continue // a subresource, or a review kind that is never stored
			}
			checked++
			tpl := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: x}\n", l.GroupVersion, r.Kind)
			cv := &release.ComponentVersion{Name: "c", Version: release.MustParseVersion("v1.0"), Type: release.TypeManifest,
				Manifests: []release.Manifest{{Name: "m.yaml", Template: tpl}}}
			objs, err := components.NewManifest(components.NewRecorder()).Render(runner.Task{Component: "c", To: cv})
			require.NoError(t, err, "%s %s", l.GroupVersion, r.Kind)
			require.Len(t, objs, 1)
			if got := objs[0].Namespace == ""; got != !r.Namespaced {
				missing = append(missing, fmt.Sprintf("%s %s (server: namespaced=%v)", l.GroupVersion, r.Kind, r.Namespaced))
			}
		}
	}
	assert.Greater(t, checked, 40, "kinds checked")
	assert.Empty(t, missing, "built-in kinds whose scope components/scope.go gets wrong")
}
