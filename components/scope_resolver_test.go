package components_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// scope is what a resolvingApplier answers for a kind.
type scope struct {
	cluster, known bool
	err            error
}

// resolvingApplier is a Recorder that is a ScopeResolver: it answers from
// scopes ("Kind.group" names; unlisted kinds are unknown) and records what
// it was asked.
type resolvingApplier struct {
	*components.Recorder
	scopes map[string]scope

	mu    sync.Mutex
	asked []string
}

func (r *resolvingApplier) ClusterScoped(group, kind string) (bool, bool, error) {
	gk := kind + "." + group
	if group == "" {
		gk = kind
	}
	r.mu.Lock()
	r.asked = append(r.asked, gk)
	r.mu.Unlock()
	s := r.scopes[gk]
	return s.cluster, s.known, s.err
}

func (r *resolvingApplier) questions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

const (
	issuerCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: issuers.example.io}
spec:
  group: example.io
  scope: {{ .Values.scope }}
  names: {plural: issuers, kind: Issuer}
`
	issuer       = "apiVersion: example.io/v1\nkind: Issuer\nmetadata: {name: main}\n"
	issuerInOps  = "apiVersion: example.io/v1\nkind: Issuer\nmetadata: {name: main, namespace: ops}\n"
	issuerTwo    = "apiVersion: example.io/v1\nkind: Issuer\nmetadata: {name: two}\n"
	certificate  = "apiVersion: example.io/v1\nkind: Certificate\nmetadata: {name: web}\n"
	settingsMap  = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
	namespaceObj = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ops}\n"
	clusterRole  = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n"
)

var errDiscovery = errors.New("discovery: the server is currently unable to handle the request")

// TestManifestScopeResolver checks which source decides a kind's scope:
// the built-in kinds, a CRD of the same render and WithClusterScoped
// before the Applier's ScopeResolver, which is asked only about the
// others, once per kind; a kind it does not know is namespaced.
func TestManifestScopeResolver(t *testing.T) {
	everything := map[string]scope{ // what the cluster says when asked
		"Issuer.example.io":                     {cluster: true, known: true},
		"Certificate.example.io":                {known: true},
		"ConfigMap":                             {known: true},
		"Namespace":                             {known: true}, // wrong, to show it is not asked
		"ClusterRole.rbac.authorization.k8s.io": {known: true},
	}
	tests := []struct {
		name      string
		plain     bool // a Recorder, no ScopeResolver
		scopes    map[string]scope
		opts      []components.ManifestOption
		scopeVal  string // .Values.scope of issuerCRD
		templates []string
		want      []string // Render's objects
		wantAsked []string
		wantErr   string // Render's error
	}{
		{
			name: "built-in kinds are not asked", scopes: everything,
			templates: []string{namespaceObj, clusterRole},
			want:      []string{"Namespace ops", "ClusterRole reader"},
		},
		{
			name: "a built-in kind the table does not hold is asked", scopes: everything,
			templates: []string{settingsMap},
			want:      []string{"ConfigMap apps/settings"}, wantAsked: []string{"ConfigMap"},
		},
		{
			name: "a cluster-scoped CRD of the same render decides", scopes: map[string]scope{"Issuer.example.io": {known: true}},
			scopeVal: "Cluster", templates: []string{issuerCRD, issuer},
			want: []string{"CustomResourceDefinition issuers.example.io", "Issuer main"},
		},
		{
			name: "a namespaced CRD of the same render wins over the cluster", scopes: everything,
			scopeVal: "Namespaced", templates: []string{issuerCRD, issuer},
			want: []string{"CustomResourceDefinition issuers.example.io", "Issuer apps/main"},
		},
		{
			name: "WithClusterScoped decides", scopes: map[string]scope{"Issuer.example.io": {known: true}},
			opts:      []components.ManifestOption{components.WithClusterScoped("Issuer.example.io")},
			templates: []string{issuer},
			want:      []string{"Issuer main"},
		},
		{
			name: "resolver: cluster-scoped, asked once per kind", scopes: everything,
			templates: []string{issuer, issuerTwo, certificate},
			want:      []string{"Issuer main", "Issuer two", "Certificate apps/web"},
			wantAsked: []string{"Certificate.example.io", "Issuer.example.io"},
		},
		{
			name: "resolver: cluster-scoped with a namespace set", scopes: everything,
			templates: []string{issuerInOps},
			wantAsked: []string{"Issuer.example.io"},
			wantErr:   "components: web v1.0: render: m1.yaml:1: document 1: Issuer main is cluster-scoped but sets metadata.namespace ops; remove it",
		},
		{
			name: "resolver: namespaced", scopes: everything,
			templates: []string{certificate},
			want:      []string{"Certificate apps/web"}, wantAsked: []string{"Certificate.example.io"},
		},
		{
			name: "resolver: unknown kind is namespaced", scopes: map[string]scope{},
			templates: []string{issuer},
			want:      []string{"Issuer apps/main"}, wantAsked: []string{"Issuer.example.io"},
		},
		{
			name: "no resolver: as before", plain: true,
			templates: []string{issuer},
			want:      []string{"Issuer apps/main"},
		},
		{
			name: "resolver: error, the first kind in order stops it", scopes: map[string]scope{"Certificate.example.io": {err: errDiscovery}, "Issuer.example.io": {err: errDiscovery}},
			templates: []string{issuer, certificate},
			wantAsked: []string{"Certificate.example.io"},
			wantErr:   "components: web v1.0: render: cannot tell whether Certificate.example.io is cluster-scoped, which decides the namespace of its objects: " + errDiscovery.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ra := &resolvingApplier{Recorder: components.NewRecorder(), scopes: tt.scopes}
			var a components.Applier = ra
			if tt.plain {
				a = components.NewRecorder()
			}
			opts := append([]components.ManifestOption{components.WithValues(map[string]any{"scope": tt.scopeVal})}, tt.opts...)
			m := components.NewManifest(a, opts...)
			cv := manifestCV("web", "v1.0", tt.templates...)
			cv.Params = map[string]string{"namespace": "apps"}

			objs, err := m.Render(task(nil, cv, nil))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.want, names(objs), "Render(%s) objects", tt.name)
			}
			assert.Equal(t, tt.wantAsked, ra.questions(), "kinds asked, in order")
		})
	}
}

// TestManifestScopeResolverRun checks that Run applies and records a
// custom resource the resolver says is cluster-scoped without a namespace,
// in its Content and YAML too, that the next version prunes it by that
// identity, and that Validate gives it its cluster scope at plan time.
func TestManifestScopeResolverRun(t *testing.T) {
	ctx := context.Background()
	ra := &resolvingApplier{Recorder: components.NewRecorder(), scopes: map[string]scope{
		"Issuer.example.io": {cluster: true, known: true}, "ConfigMap": {known: true}}}
	m := components.NewManifest(ra, components.WithInstance("probe"))
	v1 := manifestCV("issuer", "v1.0", issuer, settingsMap)
	v1.Params = map[string]string{"namespace": "ops"}
	v2 := manifestCV("issuer", "v2.0", settingsMap)
	v2.Params = v1.Params

	require.NoError(t, m.Validate(v1))
	require.NoError(t, m.Run(ctx, task(nil, v1, nil)))
	live := ra.Live()
	require.Len(t, live, 2)
	for _, o := range live {
		if o.Kind != "Issuer" {
			continue
		}
		assert.Equal(t, "", o.Namespace, "live Issuer's namespace")
		md, _ := o.Content["metadata"].(map[string]any)
		assert.NotContains(t, md, "namespace", "live Issuer's metadata")
		assert.NotContains(t, o.YAML, "namespace:", "live Issuer's YAML")
	}
	invs, err := ra.Inventories(ctx, "probe")
	require.NoError(t, err)
	require.Len(t, invs, 1)
	assert.Contains(t, invs[0].Objects, components.Ref{Group: "example.io", Version: "v1", Kind: "Issuer", Name: "main"}, "inventory")

	require.NoError(t, m.Run(ctx, task(v1, v2, nil)))
	assert.Equal(t, []string{
		"issuer v1.0: apply Issuer main",
		"issuer v1.0: apply ConfigMap ops/settings",
		"issuer v2.0: apply ConfigMap ops/settings",
		"issuer v1.0: delete Issuer main", // a pruned object names the version that applied it
	}, actions(ra.Recorder))
}

// TestManifestScopeResolverError checks that a resolver's error fails
// Validate, and Run and RunPhase without runner.Permanent, since a retry
// may find the cluster's discovery working; and that the retry then runs.
func TestManifestScopeResolverError(t *testing.T) {
	ctx := context.Background()
	failing := map[string]scope{"Issuer.example.io": {err: errDiscovery}}
	ra := &resolvingApplier{Recorder: components.NewRecorder(), scopes: failing}
	m := components.NewManifest(ra)
	cv := manifestCV("issuer", "v1.0", issuer)
	phased := &release.ComponentVersion{Name: "issuer", Version: release.MustParseVersion("v1.0"), Type: release.TypeManifest,
		Lifecycle: release.Lifecycle{Phases: []release.LifecyclePhase{{Name: "install", Manifests: []release.Manifest{{Name: "i.yaml", Template: issuer}}}}}}

	err := m.Validate(cv)
	assert.ErrorIs(t, err, errDiscovery, "Validate")
	_, isScope := errors.AsType[*components.ScopeError](err)
	assert.True(t, isScope, "Validate's error %v is a *ScopeError", err)

	for name, run := range map[string]func() error{
		"Run":      func() error { return m.Run(ctx, task(nil, cv, nil)) },
		"RunPhase": func() error { return m.RunPhase(ctx, task(nil, phased, nil), "install") },
	} {
		err := run()
		se, ok := errors.AsType[*components.ScopeError](err)
		require.True(t, ok, "%s: %v is a *ScopeError", name, err)
		assert.Equal(t, components.ScopeError{Group: "example.io", Kind: "Issuer", Err: errDiscovery}, *se, name)
		assert.False(t, runner.IsPermanent(err), "%s: runner.IsPermanent(%v) = true, want false", name, err)
		var ce *components.Error
		require.ErrorAs(t, err, &ce, name)
		assert.Equal(t, "render", ce.Op, name)
	}
	assert.Empty(t, ra.Actions(), "nothing is applied")

	// Other render errors stay permanent with a resolver.
	err = m.Run(ctx, task(nil, manifestCV("issuer", "v1.0", issuerInOps+"---\n"+issuerInOps), nil))
	assert.True(t, runner.IsPermanent(err), "a duplicate object: runner.IsPermanent(%v) = false, want true", err)

	ra.scopes = map[string]scope{"Issuer.example.io": {cluster: true, known: true}}
	require.NoError(t, m.Run(ctx, task(nil, cv, nil)), "the retry")
	assert.Equal(t, []string{"issuer v1.0: apply Issuer main"}, actions(ra.Recorder))
}
