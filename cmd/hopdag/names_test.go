package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A name that is not in the plan (--check, --fail) or not in the catalog
// (--accept) is a usage error that lists the names there are, not a flag
// silently ignored; a run refused so creates no --state.
func TestUnknownNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"check", []string{"run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--check", "helthy=true"},
			"hopdag run: --check helthy: no rule of the catalog declares hop check helthy; its checks are cluster-healthy, conformance-smoke, etcd-backup, nodes-ready, registry-mirror-reachable"},
		{"check without checks", []string{"run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "out=" + t.TempDir(), "--check", "healthy=true"},
			"hopdag run: --check healthy: the catalog declares no hop checks"},
		{"fail", []string{"run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--simulate", "--fail", "db,etdc"},
			"hopdag run: --fail etdc: the plan has no component etdc; its components are app, cache, config, db"},
		{"accept on plan", []string{"plan", "-", "--from", "v26.06", "--to", "v26.09", "--accept", "containerd-v2-confg"},
			"hopdag plan: --accept containerd-v2-confg: the catalog declares no such risk; its risks are containerd-v2-config"},
		{"accept on run", []string{"run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--simulate", "--accept", "nope"},
			"hopdag run: --accept nope: the catalog declares no risks"},
		{"accept on targets", []string{"targets", catalog, "--from", "v26.06", "--accept", "x,containerd-v2-config,y"},
			"hopdag targets: --accept x, y: the catalog declares no such risks; its risks are containerd-v2-config"},
		{"accept on graph", []string{"graph", catalog, "--from", "v26.06", "--to", "v26.09", "--accept", "x"},
			"hopdag graph: --accept x: the catalog declares no such risk; its risks are containerd-v2-config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			state := filepath.Join(t.TempDir(), "state")
			if args[0] == "run" {
				args = append(args, "--state", state)
			}
			code, out, stderr := invoke(args...)
			assert.Equal(t, exitUsage, code, "hopdag %s; stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr)
			assert.Contains(t, stderr, tt.want+"\n")
			assert.Empty(t, out)
			_, err := os.Stat(state)
			assert.ErrorIs(t, err, os.ErrNotExist, "a refused run created --state")
		})
	}
	// A check that another route of the catalog has is no typo: a script
	// may give every upgrade the same --check commands.
	code, out, stderr := invoke("run", "-", "--from", "v26.06-rc.2", "--to", "v26.06-rc.3", "--simulate", "--check", "etcd-backup=true", "--check", "cluster-healthy=true")
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
}
