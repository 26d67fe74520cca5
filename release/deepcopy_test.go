package release_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// The full* constructors set every field, so that a field added later without
// a DeepCopy line fails requireAllSet.

func fullComponent() *release.ComponentVersion {
	return &release.ComponentVersion{
		Name: "etcd", Version: v("v3.5.21"), Type: release.TypeInline,
		Dependencies: []string{"bkeagent"}, Before: release.BeforeAll,
		Timeout: release.D(time.Minute),
		Retries: &release.Retries{Attempts: 3, Backoff: release.D(time.Second), MaxBackoff: release.D(time.Minute)},
		HealthChecks: []release.HealthCheck{{
			Name: "etcd-healthy", Timeout: release.D(time.Minute), Interval: release.D(time.Second),
			Params: map[string]string{"endpoint": "https://127.0.0.1:2379"},
		}},
		Group: "control-plane", ExpectedDuration: release.D(3 * time.Minute),
		Params:    map[string]string{"dataDir": "/var/lib/etcd"},
		Handler:   "etcd",
		Command:   &release.Command{Args: []string{"/bin/upgrade"}, Env: map[string]string{"A": "1"}, Dir: "/tmp"},
		Manifests: []release.Manifest{{Name: "m", File: "m.yaml", Template: "kind: ConfigMap"}},
		Helm:      &release.HelmChart{Chart: "oci://r/c", Repo: "https://r", Version: "1.0.0", Digest: "sha256:00", Release: "r", Namespace: "ns", Values: "a: b"},
		Lifecycle: release.Lifecycle{
			Phases: []release.LifecyclePhase{{Name: "drain", Handler: "drain", Command: &release.Command{Args: []string{"d"}, Env: map[string]string{"A": "b"}, Dir: "/"},
				Manifests: []release.Manifest{{Name: "p", File: "p.yaml", Template: "x"}}, Gate: &release.Gate{Reason: "look"}}},
			Gate:         &release.Gate{Reason: "approve"},
			Rollback:     &release.Command{Args: []string{"undo"}, Env: map[string]string{"A": "b"}, Dir: "/"},
			Irreversible: "data migration",
		},
		Source: release.Source{File: "etcd.yaml", Line: 1},
	}
}

func fullRelease() *release.Release {
	return &release.Release{
		Name: "v26.06", Version: v("v26.06"), Track: "platform",
		Components: []release.ComponentRef{{Name: "etcd", Version: v("v3.5.21")}},
		Supports:   map[string]release.Constraint{"kubernetes": release.MustParseConstraint(">= v1.33, < v1.35")},
		Compatibility: []release.Compatibility{
			{Component: "kubernetes-master", Requires: "etcd", Versions: release.MustParseConstraint(">= v3.5")},
		},
		Source: release.Source{File: "r.yaml", Line: 1},
	}
}

func fullRule() *release.Rule {
	return &release.Rule{
		From: release.MustParseConstraint(">= v26.03"), To: v("v26.06"),
		Blocked: "b", Deprecated: "d",
		Risks:       []release.Risk{{Name: "r", Message: "m", URL: "https://example.com"}},
		PreChecks:   []release.Check{{Name: "pre", Required: true}},
		PostChecks:  []release.Check{{Name: "post", Required: true}},
		RuleControl: release.RuleControl{Gate: &release.Gate{Reason: "approve"}, OnFailure: release.OnFailureRollback},
		Source:      release.Source{File: "p.yaml", Line: 7},
	}
}

func fullPath() *release.UpgradePath {
	yes := true
	return &release.UpgradePath{
		Name: "p", Track: "platform",
		Rules:    []release.Rule{*fullRule()},
		Versions: []release.VersionInfo{{Version: v("v26.06"), Installable: &yes, Deprecated: "old", Channels: []string{"stable", "fast"}}},
		Source:   release.Source{File: "p.yaml", Line: 1},
	}
}

// immutable types are values whose internals are never written after
// parsing; DeepCopy copies them by assignment.
var immutable = map[reflect.Type]bool{
	reflect.TypeFor[release.Version]():    true,
	reflect.TypeFor[release.Constraint](): true,
	reflect.TypeFor[release.Duration]():   true,
}

// requireAllSet fails if any exported field reachable from v is zero.
func requireAllSet(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	require.False(t, v.IsZero(), "%s is zero: set it in the full* constructor", path)
	if immutable[v.Type()] {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		requireAllSet(t, path, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				requireAllSet(t, path+"."+f.Name, v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			requireAllSet(t, path+"[i]", v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			requireAllSet(t, path+"["+k.String()+"]", v.MapIndex(k))
		}
	}
}

// assertNoSharedMemory fails if a and b share a pointer, slice array or map.
func assertNoSharedMemory(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	if immutable[a.Type()] {
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return
		}
		assert.NotEqual(t, a.Pointer(), b.Pointer(), "%s: the copy shares the pointer", path)
		assertNoSharedMemory(t, path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			assertNoSharedMemory(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	case reflect.Slice:
		if a.Len() == 0 {
			return
		}
		assert.NotEqual(t, a.Pointer(), b.Pointer(), "%s: the copy shares the slice's array", path)
		for i := range a.Len() {
			assertNoSharedMemory(t, path+"[i]", a.Index(i), b.Index(i))
		}
	case reflect.Map:
		if a.IsNil() {
			return
		}
		assert.NotEqual(t, a.Pointer(), b.Pointer(), "%s: the copy shares the map", path)
		for _, k := range a.MapKeys() {
			assertNoSharedMemory(t, path+"["+k.String()+"]", a.MapIndex(k), b.MapIndex(k))
		}
	}
}

func TestDeepCopy(t *testing.T) {
	tests := []struct {
		name   string
		full   func() any
		copy   func(any) any
		into   func(any) any
		mutate func(any) // changes every reference field of the copy
	}{
		{
			name: "ComponentVersion",
			full: func() any { return fullComponent() },
			copy: func(x any) any { return x.(*release.ComponentVersion).DeepCopy() },
			into: func(x any) any {
				out := new(release.ComponentVersion)
				x.(*release.ComponentVersion).DeepCopyInto(out)
				return out
			},
			mutate: func(x any) {
				c := x.(*release.ComponentVersion)
				c.Dependencies[0] = "x"
				c.Retries.Attempts = 9
				c.HealthChecks[0].Name = "x"
				c.HealthChecks[0].Params["endpoint"] = "x"
				c.Params["dataDir"] = "x"
				c.Params["new"] = "x"
				c.Command.Args[0] = "x"
				c.Command.Env["A"] = "x"
				c.Manifests[0].Template = "x"
			},
		},
		{
			name: "Release",
			full: func() any { return fullRelease() },
			copy: func(x any) any { return x.(*release.Release).DeepCopy() },
			into: func(x any) any {
				out := new(release.Release)
				x.(*release.Release).DeepCopyInto(out)
				return out
			},
			mutate: func(x any) {
				r := x.(*release.Release)
				r.Components[0].Version = v("v9.9")
				r.Supports["kubernetes"] = release.MustParseConstraint("*")
				r.Supports["new"] = release.MustParseConstraint("*")
				r.Compatibility[0].Requires = "x"
			},
		},
		{
			name: "Rule",
			full: func() any { return fullRule() },
			copy: func(x any) any { return x.(*release.Rule).DeepCopy() },
			into: func(x any) any {
				out := new(release.Rule)
				x.(*release.Rule).DeepCopyInto(out)
				return out
			},
			mutate: func(x any) {
				r := x.(*release.Rule)
				r.Risks[0].Name = "x"
				r.PreChecks[0].Name = "x"
				r.PostChecks[0].Required = false
			},
		},
		{
			name: "UpgradePath",
			full: func() any { return fullPath() },
			copy: func(x any) any { return x.(*release.UpgradePath).DeepCopy() },
			into: func(x any) any {
				out := new(release.UpgradePath)
				x.(*release.UpgradePath).DeepCopyInto(out)
				return out
			},
			mutate: func(x any) {
				p := x.(*release.UpgradePath)
				p.Rules[0].Risks[0].Name = "x"
				p.Rules[0].PreChecks[0].Name = "x"
				p.Rules[0].PostChecks[0].Name = "x"
				*p.Versions[0].Installable = false
				p.Versions[0].Deprecated = "x"
			},
		},
		{
			name: "Command",
			full: func() any { return fullComponent().Command },
			copy: func(x any) any { return x.(*release.Command).DeepCopy() },
			into: func(x any) any { return x.(*release.Command).DeepCopy() },
			mutate: func(x any) {
				c := x.(*release.Command)
				c.Args[0] = "x"
				c.Env["A"] = "x"
			},
		},
		{
			name: "HealthCheck",
			full: func() any { return &fullComponent().HealthChecks[0] },
			copy: func(x any) any {
				out := new(release.HealthCheck)
				x.(*release.HealthCheck).DeepCopyInto(out)
				return out
			},
			into: func(x any) any {
				out := new(release.HealthCheck)
				x.(*release.HealthCheck).DeepCopyInto(out)
				return out
			},
			mutate: func(x any) { x.(*release.HealthCheck).Params["endpoint"] = "x" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.full()
			requireAllSet(t, tt.name, reflect.ValueOf(orig))
			for how, cp := range map[string]func(any) any{"DeepCopy": tt.copy, "DeepCopyInto": tt.into} {
				c := cp(orig)
				assert.Equal(t, orig, c, "%s equals the original", how)
				assertNoSharedMemory(t, tt.name, reflect.ValueOf(orig), reflect.ValueOf(c))
				tt.mutate(c)
				assert.Equal(t, tt.full(), orig, "%s: changing the copy changed the original", how)
				assert.NotEqual(t, orig, c, "mutate changed nothing")
			}
		})
	}
}

func TestDeepCopyNil(t *testing.T) {
	assert.Nil(t, (*release.ComponentVersion)(nil).DeepCopy())
	assert.Nil(t, (*release.Release)(nil).DeepCopy())
	assert.Nil(t, (*release.Rule)(nil).DeepCopy())
	assert.Nil(t, (*release.UpgradePath)(nil).DeepCopy())
	assert.Nil(t, (*release.Command)(nil).DeepCopy())

	// Nil and empty reference fields stay as they are.
	empty := &release.ComponentVersion{Name: "a"}
	assert.Equal(t, empty, empty.DeepCopy())
	p := &release.UpgradePath{Name: "p"}
	assert.Equal(t, p, p.DeepCopy())
	r := &release.Release{Name: "r"}
	assert.Equal(t, r, r.DeepCopy())
}

// TestDeepCopyLoaded: every component, release and path of the sample
// catalog copies without shared memory.
func TestDeepCopyLoaded(t *testing.T) {
	c := loadCatalog(t)
	for i := range c.Components {
		cv := &c.Components[i]
		cp := cv.DeepCopy()
		assert.Equal(t, cv, cp)
		assertNoSharedMemory(t, cv.Key(), reflect.ValueOf(cv), reflect.ValueOf(cp))
	}
	for i := range c.Releases {
		r := &c.Releases[i]
		cp := r.DeepCopy()
		assert.Equal(t, r, cp)
		assertNoSharedMemory(t, r.Name, reflect.ValueOf(r), reflect.ValueOf(cp))
	}
	for i := range c.Paths {
		p := &c.Paths[i]
		cp := p.DeepCopy()
		assert.Equal(t, p, cp)
		assertNoSharedMemory(t, p.Name, reflect.ValueOf(p), reflect.ValueOf(cp))
	}
}

func TestCatalogDeepCopy(t *testing.T) {
	c, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	cp := c.DeepCopy()
	require.Equal(t, c.Versions(), cp.Versions())
	r, ok := cp.Release(release.MustParseVersion("v26.06"))
	require.True(t, ok, "the copy is indexed")
	r.Components[0].Name = "changed"
	cp.Components[0].Dependencies = append(cp.Components[0].Dependencies, "changed")
	orig, _ := c.Release(release.MustParseVersion("v26.06"))
	assert.NotEqual(t, "changed", orig.Components[0].Name, "changing the copy changed the original release")
	assert.NotContains(t, c.Components[0].Dependencies, "changed", "changing the copy changed the original component")
	assert.Nil(t, (*release.Catalog)(nil).DeepCopy())
}

func TestZeroDurationsAreOmittedFromJSON(t *testing.T) {
	data, err := json.Marshal(release.ComponentVersion{Name: "etcd", Version: release.MustParseVersion("v3.5.0"), Retries: &release.Retries{Attempts: 2}})
	require.NoError(t, err)
	assert.NotContains(t, string(data), "0s", "unset durations must not appear in JSON: %s", data)
}
