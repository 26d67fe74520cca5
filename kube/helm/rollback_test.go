package helm_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/release"
)

// stripLabels removes hopdag's label from revision only's Secret in ns,
// or every revision's when only is 0: a release made before the runner
// labelled its revisions.
func (c *cluster) stripLabels(t *testing.T, ns string, only int) {
	t.Helper()
	ctx := context.Background()
	list, err := c.kc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	require.NoError(t, err)
	require.NotEmpty(t, list.Items)
	for _, s := range list.Items {
		if only != 0 && s.Labels["version"] != itoa(only) {
			continue
		}
		delete(s.Labels, helm.VersionLabel)
		_, err := c.kc.CoreV1().Secrets(ns).Update(ctx, &s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
}

// Rollback goes back to the from-version's revision, by the version
// label, not one revision back: run again it changes nothing, over two
// hops it lands on the first hop's from-version, after an upgrade that
// failed before Helm wrote a revision it stays, and for a release made
// before labels it finds the hop's from-revision by order, or says it
// cannot.
func TestHelmRollbackToFromVersion(t *testing.T) {
	c := newCluster(t)
	r := helm.New(c.rc, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
	v1, v2, v3 := appVersion("v1.0", 80), appVersion("v2.0", 8080), appVersion("v3.0", 70000)
	missing := appVersion("v3.0", 80)
	missing.Helm.Chart = "charts/nope"
	type step struct {
		from, to *release.ComponentVersion
		fail     bool // the Run fails
		strip    bool // instead of a Run: remove the labels so far
		only     int  // of this revision only
	}
	type rollback struct {
		from, to *release.ComponentVersion
		err      string // the error contains it
	}
	for i, tc := range []struct {
		name      string
		run       []step
		rollbacks []rollback
		want      string // the greeting after, "" for none
		added     int    // revisions the rollbacks add
		label     string // the last revision's VersionLabel after
	}{
		{name: "rolled back twice", run: []step{{to: v1}, {from: v1, to: v2}},
			rollbacks: []rollback{{from: v1, to: v2}, {from: v1, to: v2}},
			want:      "hello v1.0 from lab", added: 1, label: "1.0.0"},
		{name: "two hops rolled back", run: []step{{to: v1}, {from: v1, to: v2}, {from: v2, to: v3, fail: true}},
			rollbacks: []rollback{{from: v2, to: v3}, {from: v1, to: v2}},
			want:      "hello v1.0 from lab", added: 2, label: "1.0.0"},
		{name: "failed before a revision", run: []step{{to: v1}, {from: v1, to: v2}, {from: v2, to: missing, fail: true}},
			rollbacks: []rollback{{from: v2, to: missing}},
			want:      "hello v2.0 from lab", added: 0, label: "2.0.0"},
		{name: "installed by the hop", run: []step{{to: v1}},
			rollbacks: []rollback{{to: v1}, {to: v1}},
			want:      "", added: -1},
		{name: "revisions before labels", run: []step{{to: v1}, {strip: true}, {from: v1, to: v3, fail: true}},
			rollbacks: []rollback{{from: v1, to: v3}, {from: v1, to: v3}},
			want:      "hello v1.0 from lab", added: 1, label: "1.0.0"},
		{name: "revisions before labels, two hops", run: []step{{to: v1}, {from: v1, to: v2}, {strip: true}, {from: v2, to: v3, fail: true}},
			rollbacks: []rollback{{from: v2, to: v3}, {from: v1, to: v2}, {from: v1, to: v2}},
			want:      "hello v1.0 from lab", added: 2, label: "1.0.0"},
		{name: "an unlabelled revision between labelled ones", run: []step{{to: v1}, {from: v1, to: v2}, {strip: true, only: 2}, {from: v2, to: v3, fail: true}},
			rollbacks: []rollback{{from: v2, to: v3, err: "no deployed revision is labelled hopdag.io/version=2.0.0, nor is one certain to be that version (revisions: 1 (app-0.1.0, 1.0.0, superseded), 2 (app-0.1.0, unlabelled, deployed), 3 (app-0.1.0, 3.0.0, failed))"}},
			want:      "hello v3.0 from lab", added: 0, label: "3.0.0"}, // the failed upgrade applied the ConfigMap; nothing is rolled back
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := "rb-" + itoa(i+1)
			on := func(cv *release.ComponentVersion) *release.ComponentVersion {
				if cv == nil {
					return nil
				}
				return in(cv, ns)
			}
			for i, s := range tc.run {
				if s.strip {
					c.stripLabels(t, ns, s.only)
					continue
				}
				err := r.Run(ctx, task(on(s.from), on(s.to)))
				if s.fail {
					require.Error(t, err, "step %d: Run(%s) fails", i, s.to.Key())
				} else {
					require.NoError(t, err, "step %d: Run(%s)", i, s.to.Key())
				}
			}
			before := len(c.revisions(t, ns))
			for i, rb := range tc.rollbacks {
				err := r.Rollback(ctx, task(on(rb.from), on(rb.to)))
				if rb.err != "" {
					assert.ErrorContains(t, err, rb.err, "rollback %d", i)
					assert.ErrorContains(t, err, "helm rollback app REVISION -n "+ns, "rollback %d says how to roll back by hand", i)
				} else {
					require.NoError(t, err, "rollback %d", i)
				}
			}
			assert.Equal(t, tc.want, c.greeting(t, ns))
			after := len(c.revisions(t, ns))
			if tc.added < 0 {
				assert.Zero(t, after, "the release is uninstalled")
			} else {
				assert.Equal(t, tc.added, after-before, "revisions added by the rollbacks")
				revs := c.revisions(t, ns)
				assert.Equal(t, tc.label, revs[len(revs)-1].Labels[helm.VersionLabel], "the last revision's label")
			}
		})
	}
}

// onMessage is a slog handler that calls f once when a record with
// message msg is logged.
type onMessage struct {
	msg  string
	once *sync.Once
	f    func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(h.f)
	}
	return nil
}
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onMessage) WithGroup(string) slog.Handler      { return h }

// A rollback that finishes after its context was cancelled (Ctrl-C
// during Helm's wait) reports success: the release is back, and the
// executor must not record it interrupted and do it again.
func TestHelmRollbackFinishedAfterCancel(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Helm logs this once the rolled-back revision is applied and waited
	// for.
	h := onMessage{msg: "updating status for rolled back release", once: &sync.Once{}, f: cancel}
	r := helm.New(c.rc, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}),
		helm.WithSettings(settings(t)), helm.WithLogger(slog.New(h)))
	v1, v2 := in(appVersion("v1.0", 80), "cancel"), in(appVersion("v2.0", 8080), "cancel")
	require.NoError(t, r.Run(ctx, task(nil, v1)))
	require.NoError(t, r.Run(ctx, task(v1, v2)))
	require.NoError(t, r.Rollback(ctx, task(v1, v2)), "the rollback finished")
	require.Error(t, ctx.Err(), "the context was cancelled during the rollback")
	assert.Equal(t, "hello v1.0 from lab", c.greeting(t, "cancel"))
	assert.NoError(t, r.Rollback(ctx, task(v1, v2)), "run again (resumed), it has nothing to do")
	assert.Len(t, c.revisions(t, "cancel"), 3, "install, upgrade, one rollback")
	// A rollback that has something to do (back to v2.0's revision) does
	// not start once ctx is done.
	assert.ErrorIs(t, r.Rollback(ctx, task(v2, v1)), context.Canceled)
	assert.Len(t, c.revisions(t, "cancel"), 3, "no revision added")
	assert.Equal(t, "hello v1.0 from lab", c.greeting(t, "cancel"))
}
