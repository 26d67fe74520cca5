package apply

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// WithLogger(nil) means the default, a logger that discards, as it does
// for runner and state: a nil *slog.Logger would crash the first log.
func TestWithLoggerNil(t *testing.T) {
	a, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, WithLogger(nil))
	require.NoError(t, err)
	require.NotNil(t, a.cfg.log, "New(cfg, WithLogger(nil)): the applier's logger")
	a.cfg.log.Info("discarded")
}
