package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// The run's end writes the updates of the version it reached with the
// outcome: the first status that says the upgrade completed already
// lists the targets from the new version (the reconcile after the run
// has nothing left to write). Every status written is seen, through a
// watch from the ClusterVersion's creation.
func TestRunEndWritesUpdates(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	startOperator(t, opConfig{rn: slowRunner(t, 20*time.Millisecond)})
	cat, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	ts, err := path.Targets(cat, path.MustParseState("v26.06"))
	require.NoError(t, err)
	var want []string
	for _, tg := range ts {
		want = append(want, tg.Version.Original())
	}
	require.NotEmpty(t, want, "v26.06 has updates in %s", catalogDir)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	cv := newCV(ns, "v26.06-rc.2", "v26.06")
	require.NoError(t, c.Create(ctx, cv))
	w, err := wc.Watch(ctx, &v1alpha1.ClusterVersionList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": cv.Name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cv.ResourceVersion}})
	require.NoError(t, err)
	defer w.Stop()
	for ev := range w.ResultChan() {
		got, ok := ev.Object.(*v1alpha1.ClusterVersion)
		if !ok || len(got.Status.History) == 0 || got.Status.History[0].CompletionTime == nil {
			continue
		}
		require.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State, "the upgrade's outcome: %s", got.Status.History[0].Message)
		require.Equal(t, "v26.06", got.Status.CurrentVersion)
		var av []string
		for _, u := range got.Status.AvailableUpdates {
			av = append(av, u.Version)
		}
		assert.Equal(t, want, av, "availableUpdates of the first status that says the upgrade completed, want the targets from v26.06")
		return
	}
	t.Fatalf("the watch ended (%v) before a status said the upgrade completed", ctx.Err())
}
