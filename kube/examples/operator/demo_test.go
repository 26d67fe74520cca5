package main

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDemo runs the demo as the README gives it: an API server calling
// the webhook this operator serves, the sample catalog, and an upgrade
// v26.06-rc.2 -> v26.09 that completes.
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
	require.NoError(t, run(ctx, "../../../testdata/catalog", true, false, "default", "", slog.New(slog.DiscardHandler)))
}
