package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDemo runs the demo as docs/operator.md gives it: an API server calling
// the webhook this operator serves, the sample catalog, and an upgrade
// v26.06-rc.2 -> v26.09 that completes, of a ClusterVersion whose name is
// too long for "hopdag-"+NAME to be a label value (it failed
// StoreUnavailable, "must be no more than 63 bytes", and never upgraded).
func TestDemo(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		msg := `no API server: set KUBEBUILDER_ASSETS (eval "$(tools/env.sh kube)")`
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// One ClusterVersion: two would upgrade the same cluster, and the
	// manifests of each refuse the other's objects. Its name is the
	// README's "cluster" made too long for "hopdag-"+NAME to be a label
	// value; the demo runs the same code for either.
	names := []string{"cluster-" + strings.Repeat("x", 52)}
	require.NoError(t, run(ctx, "../../../testdata/catalog", true, false, "default", "", names, slog.New(slog.DiscardHandler)), "the demo upgrading ClusterVersions %v", names)
}
