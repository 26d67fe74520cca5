package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
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
	// The operator's log, and controller-runtime's into it (where a
	// failed Reconcile is logged, "Reconciler error"), as main sets them
	// up: a clean demo, start to shutdown, warns of nothing and errs
	// nothing (issue 31: "no ERROR on a clean shutdown", a status write's
	// conflict is no WARN unless it persists). (klog is left as it is:
	// its logger is a global that client-go's goroutines read unlocked,
	// which a test cannot set back safely.)
	var logged lockedBuffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
	t.Cleanup(func() { ctrl.SetLogger(logr.Discard()) })
	require.NoError(t, run(ctx, "../../../testdata/catalog", true, false, "default", "", names, log), "the demo upgrading ClusterVersions %v", names)
	for _, line := range strings.Split(logged.String(), "\n") {
		assert.NotContains(t, line, "level=ERROR")
		assert.NotContains(t, line, "level=WARN")
	}
	assert.Contains(t, logged.String(), "level=INFO", "the log was captured")
}
