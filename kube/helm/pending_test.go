package helm_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rcommon "helm.sh/helm/v4/pkg/release/common"

	"github.com/hopdag/hopdag/kube/helm"
	"github.com/hopdag/hopdag/runner"
)

// A process SIGKILLed during Helm's wait leaves the release's last
// revision pending: the first revision pending-install, or a new revision
// pending-upgrade after the deployed one (made here as the kill leaves
// them, in Helm's storage). Run and Rollback mark it failed, say so in the
// log, and proceed; Helm alone refuses with "another operation
// (install/upgrade/rollback) is in progress".
func TestHelmResumeAfterKill(t *testing.T) {
	c := newCluster(t)
	v1, v2 := appVersion("v1.0", 80), appVersion("v2.0", 8080)
	for i, tc := range []struct {
		name    string
		pending rcommon.Status // the interrupted operation's revision
		resume  func(r *helm.Runner, ctx context.Context, t runner.Task) error
		task    func(ns string) runner.Task
		want    string         // the greeting after, "" for none (uninstalled)
		after   rcommon.Status // the interrupted revision after
	}{
		// Helm's upgrade of a release with no deployed revision supersedes
		// the failed one.
		{name: "install", pending: rcommon.StatusPendingInstall,
			resume: (*helm.Runner).Run, task: func(ns string) runner.Task { return task(nil, in(v1, ns)) },
			want: "hello v1.0 from lab", after: rcommon.StatusSuperseded},
		{name: "rollback of the install", pending: rcommon.StatusPendingInstall,
			resume: (*helm.Runner).Rollback, task: func(ns string) runner.Task { return task(nil, in(v1, ns)) },
			want: ""},
		{name: "upgrade", pending: rcommon.StatusPendingUpgrade,
			resume: (*helm.Runner).Run, task: func(ns string) runner.Task { return task(in(v1, ns), in(v2, ns)) },
			want: "hello v2.0 from lab", after: rcommon.StatusFailed},
		{name: "rollback of the upgrade", pending: rcommon.StatusPendingUpgrade,
			resume: (*helm.Runner).Rollback, task: func(ns string) runner.Task { return task(in(v1, ns), in(v2, ns)) },
			want: "hello v1.0 from lab", after: rcommon.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := "kill-" + itoa(i+1)
			r := helm.New(c.rc, helm.WithChartRoot("testdata"), helm.WithValues(map[string]any{"site": "lab"}), helm.WithSettings(settings(t)))
			require.NoError(t, r.Run(ctx, task(nil, in(v1, ns))))
			st := c.storage(ns)
			revs := c.revisions(t, ns)
			killed := revs[0]
			if tc.pending == rcommon.StatusPendingUpgrade {
				// The upgrade to v2.0 had written its revision when it was
				// killed; the deployed one stays deployed.
				up := *killed
				info := *killed.Info
				up.Info, up.Version, up.Labels = &info, 2, map[string]string{helm.VersionLabel: "2.0.0"}
				killed = &up
				killed.Info.Status = tc.pending
				require.NoError(t, st.Create(killed))
			} else {
				killed.Info.Status = tc.pending
				require.NoError(t, st.Update(killed))
			}

			var log bytes.Buffer
			tk := tc.task(ns)
			tk.Attempt, tk.Logger = 2, slog.New(slog.NewTextHandler(&log, nil))
			require.NoError(t, tc.resume(r, ctx, tk), "resumed after the kill")
			assert.Equal(t, tc.want, c.greeting(t, ns))
			if tc.want == "" {
				assert.Empty(t, c.revisions(t, ns), "uninstalled")
				return
			}
			assert.Contains(t, log.String(), `msg="helm: marking an interrupted revision failed" release=`+ns+`/app revision=`+itoa(killed.Version)+` status=`+string(tc.pending))
			revs = c.revisions(t, ns)
			assert.Equal(t, tc.after, revs[killed.Version-1].Info.Status, "the interrupted revision")
			assert.Equal(t, rcommon.StatusDeployed, revs[len(revs)-1].Info.Status, "the resumed operation's revision")
		})
	}
}
