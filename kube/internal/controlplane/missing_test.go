package controlplane_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/internal/controlplane"
)

// TestMissing sets the environment variables to files that are, or are
// not, executables, and checks what Missing names.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), mode))
		return p
	}
	assets := filepath.Join(dir, "assets")
	require.NoError(t, os.Mkdir(assets, 0o755))
	file("assets/etcd", 0o755)
	file("assets/kube-apiserver", 0o755)
	halfAssets := filepath.Join(dir, "half")
	require.NoError(t, os.Mkdir(halfAssets, 0o755))
	file("half/etcd", 0o755)
	bin := file("bin", 0o755)
	plain := file("plain", 0o644)
	all := map[string]string{
		controlplane.EnvAssets: assets, controlplane.EnvControllerManager: bin,
		controlplane.EnvScheduler: bin, controlplane.EnvKwok: bin,
	}
	tests := []struct {
		name string
		set  map[string]string
		want []string
	}{
		{name: "all there", want: nil},
		{name: "kwok unset", set: map[string]string{controlplane.EnvKwok: ""}, want: []string{controlplane.EnvKwok}},
		{name: "not executable", set: map[string]string{controlplane.EnvScheduler: plain}, want: []string{controlplane.EnvScheduler}},
		{name: "relative path", set: map[string]string{controlplane.EnvControllerManager: "kube-controller-manager"}, want: []string{controlplane.EnvControllerManager}},
		{name: "no kube-apiserver in the assets", set: map[string]string{controlplane.EnvAssets: halfAssets}, want: []string{controlplane.EnvAssets + " (etcd, kube-apiserver)"}},
		{name: "none", set: map[string]string{controlplane.EnvAssets: "", controlplane.EnvControllerManager: "", controlplane.EnvScheduler: "", controlplane.EnvKwok: ""},
			want: []string{controlplane.EnvAssets + " (etcd, kube-apiserver)", controlplane.EnvControllerManager, controlplane.EnvKwok, controlplane.EnvScheduler}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range all {
				t.Setenv(k, v)
			}
			for k, v := range tt.set {
				t.Setenv(k, v)
			}
			assert.Equal(t, tt.want, controlplane.Missing())
			if tt.want == nil {
				return
			}
			// Start refuses, saying what to run.
			_, err := controlplane.Start(context.Background())
			require.ErrorIs(t, err, controlplane.ErrMissing)
			assert.Contains(t, err.Error(), `eval "$(tools/env.sh)"`)
			for _, m := range tt.want {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
}

// TestStartOptions checks that Start refuses bad options before it starts
// anything.
func TestStartOptions(t *testing.T) {
	for _, n := range []int{0, -1} {
		_, err := controlplane.Start(context.Background(), controlplane.WithNodes(n))
		require.Error(t, err, "WithNodes(%d)", n)
		assert.False(t, errors.Is(err, controlplane.ErrMissing), "WithNodes(%d): %v", n, err)
		assert.Contains(t, err.Error(), "want at least 1 node")
	}
}
