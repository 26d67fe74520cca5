package components_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
	"github.com/hopdag/hopdag/runner"
)

// Each runner rolls its components back its own way, through the
// Router.
func TestRollbackRunners(t *testing.T) {
	h := hop("v1.0", "v2.0")
	var undone []string
	in := components.NewInline().
		Register("etcd", components.Phases{
			Upgrade:  func(context.Context, runner.Task) error { return nil },
			Rollback: func(_ context.Context, t runner.Task) error { undone = append(undone, t.Component); return nil },
		}).
		Register("plain", runner.RunnerFunc(func(context.Context, runner.Task) error { return nil }))
	rec := components.NewRecorder()
	dir := t.TempDir()
	r := components.NewRouter().Register(release.TypeInline, in).Register(release.TypeExec, components.NewExec()).
		Register(release.TypeManifest, components.NewManifest(rec))

	require.NoError(t, r.Rollback(context.Background(), task(inlineCV("etcd", "v1.0", "etcd"), inlineCV("etcd", "v2.0", "etcd"), h)))
	assert.Equal(t, []string{"etcd"}, undone, "inline: the handler's Rollback phase")

	marker := filepath.Join(dir, "undone")
	to := execCV("agent", "v2.0", "true")
	to.Rollback = &release.Command{Args: []string{"touch", marker}}
	require.NoError(t, r.Rollback(context.Background(), task(execCV("agent", "v1.0", "true"), to, h)))
	_, err := os.Stat(marker)
	assert.NoError(t, err, "exec: the rollback command ran")

	obj := func(kind, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata:\n  name: %s\n  namespace: ns\n---\n", kind, name)
	}
	from := manifestCV("app", "v1.0", obj("ConfigMap", "kept")+obj("Secret", "old"))
	mto := manifestCV("app", "v2.0", obj("ConfigMap", "kept")+obj("Service", "added"))
	// The hop ran first (v1.0 installed, then upgraded to v2.0), so the
	// component's inventory knows what v2.0 added.
	require.NoError(t, r.Run(context.Background(), task(nil, from, h)))
	require.NoError(t, r.Run(context.Background(), task(from, mto, h)))
	before := len(actions(rec))
	require.NoError(t, r.Rollback(context.Background(), task(from, mto, h)))
	assert.Equal(t, []string{"app v1.0: apply ConfigMap ns/kept", "app v1.0: apply Secret ns/old", "app v2.0: delete Service ns/added"}, actions(rec)[before:],
		"manifest: the previous objects applied, what the target added pruned from the inventory")

	// Plan-time refusals name what is missing.
	err = r.ValidateRollback(inlineCV("plain", "v2.0", "plain"))
	assert.ErrorContains(t, err, "inline handler plain (runner.RunnerFunc) has no Rollback phase")
	err = r.ValidateRollback(execCV("agent", "v2.0", "true"))
	assert.ErrorContains(t, err, "no rollback command: declare spec.rollback.args")
	assert.NoError(t, r.ValidateRollback(to))
	assert.NoError(t, r.ValidateRollback(inlineCV("etcd", "v2.0", "etcd")))
	err = r.Rollback(context.Background(), task(nil, inlineCV("plain", "v2.0", "plain"), h))
	assert.True(t, runner.IsPermanent(err), "no Rollback phase is permanent: %v", err)
	var ce *components.Error
	assert.True(t, errors.As(err, &ce) && ce.Op == "rollback", "an *Error with Op rollback: %v", err)
}
