package components_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./components -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), string(got), "%s differs; if the change is intended, rerun with -update", p)
}

// testValues are the values manifests of testdata/catalog need.
var testValues = map[string]any{"registry": "registry.local:5000"}

// loadCatalog loads the sample catalog shared by every package.
func loadCatalog(t testing.TB) *release.Catalog {
	t.Helper()
	c, err := release.LoadDir("../testdata/catalog")
	require.NoError(t, err)
	return c
}

// cvOf returns name@version from the catalog.
func cvOf(t testing.TB, c *release.Catalog, name, version string) *release.ComponentVersion {
	t.Helper()
	cv, ok := c.Component(name, release.MustParseVersion(version))
	require.True(t, ok, "catalog has no %s %s", name, version)
	return cv
}

// hop returns a hop plan between two versions (no graph).
func hop(from, to string) *runner.HopPlan {
	return &runner.HopPlan{Hop: path.Hop{From: release.MustParseVersion(from), To: release.MustParseVersion(to)}}
}

// task is a task upgrading from -> to (from may be nil) on the hop from-hop -> to-hop.
func task(from, to *release.ComponentVersion, h *runner.HopPlan) runner.Task {
	return runner.Task{Hop: h, Component: to.Name, From: from, To: to, Attempt: 1}
}

// inlineCV is an inline component version built in code.
func inlineCV(name, version, handler string) *release.ComponentVersion {
	return &release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeInline, Handler: handler}
}

// manifestCV is a manifest component version with inline templates.
func manifestCV(name, version string, templates ...string) *release.ComponentVersion {
	cv := &release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeManifest}
	for i, tpl := range templates {
		cv.Manifests = append(cv.Manifests, release.Manifest{Name: fmt.Sprintf("m%d.yaml", i+1), Template: tpl})
	}
	return cv
}

// execCV is an exec component version with the given argv.
func execCV(name, version string, args ...string) *release.ComponentVersion {
	return &release.ComponentVersion{Name: name, Version: release.MustParseVersion(version), Type: release.TypeExec,
		Command: &release.Command{Args: args}}
}

// stream prints objects as one YAML stream, each with a comment naming it.
func stream(objs []components.Object) string {
	var b strings.Builder
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# %s %s: %s document %d: %s\n", o.Component, o.Version, o.Manifest, o.Doc, o)
		b.WriteString(o.YAML)
	}
	return b.String()
}

// names returns the objects' String()s.
func names(objs []components.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.String())
	}
	return out
}

// actions returns the Recorder's log as strings.
func actions(r *components.Recorder) []string {
	var out []string
	for _, a := range r.Actions() {
		out = append(out, a.String())
	}
	return out
}

// phaseLog is a thread-safe list of what handlers did.
type phaseLog struct {
	mu  sync.Mutex
	log []string
}

func (l *phaseLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf(format, args...))
}

func (l *phaseLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

// noop is a runner that succeeds.
var noop = runner.RunnerFunc(func(context.Context, runner.Task) error { return nil })
