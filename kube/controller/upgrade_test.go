package controller_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// TestUpgradeEndToEnd upgrades testdata/catalog from v26.06-rc.2 to v26.09
// through a ClusterVersion, and checks what a user sees: status,
// conditions, history, Events and kubectl's columns.
func TestUpgradeEndToEnd(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	op := startOperator(t, opConfig{})
	ctx := context.Background()

	cv := newCV(ns, "v26.06-rc.2", "v26.06-rc.2")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 30*time.Second, "idle with its updates", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && len(cv.Status.AvailableUpdates) > 0
	})
	// availableUpdates are what `hopdag targets` prints for the same catalog.
	cat, err := release.LoadDir(catalogDir)
	require.NoError(t, err)
	ts, err := path.Targets(cat, path.MustParseState("v26.06-rc.2"))
	require.NoError(t, err)
	var want []string
	for _, tg := range ts {
		want = append(want, tg.Version.Original())
	}
	var av []string
	for _, u := range got.Status.AvailableUpdates {
		av = append(av, u.Version)
	}
	assert.Equal(t, want, av, "status.availableUpdates = hopdag targets --from v26.06-rc.2")
	require.Len(t, got.Status.ConditionalUpdates, 1)
	assert.Equal(t, "v26.09-rc.1", got.Status.ConditionalUpdates[0].Version)
	assert.Equal(t, "containerd-v2-config", got.Status.ConditionalUpdates[0].Risks[0].Name)
	assert.NotEmpty(t, got.Status.ConditionalUpdates[0].Risks[0].Message)
	assert.Empty(t, op.runner.Records(), "nothing runs while desired is current")

	got.Spec.DesiredVersion = "v26.09"
	require.NoError(t, c.Update(ctx, got))
	done := waitFor(t, c, key, 60*time.Second, "at v26.09", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == "v26.09" && cv.Status.Phase == v1alpha1.PhaseIdle
	})
	st := done.Status
	assert.Equal(t, "v26.09", st.DesiredVersion)
	require.NotEmpty(t, st.History)
	h := st.History[0]
	assert.Equal(t, v1alpha1.HistoryCompleted, h.State)
	assert.Equal(t, "v26.06-rc.2", h.From)
	assert.Equal(t, "v26.09", h.To)
	require.NotNil(t, h.CompletionTime)
	assert.False(t, h.CompletionTime.Before(&h.StartedTime))
	require.NotNil(t, st.Plan)
	assert.Equal(t, []string{"v26.06-rc.2 -> v26.06-rc.3", "v26.06-rc.3 -> v26.06", "v26.06 -> v26.09"}, st.Plan.Hops)
	assert.Equal(t, st.Plan.Progress.Total, st.Plan.Progress.Done)
	assert.Positive(t, st.Plan.Progress.Total)
	assert.Equal(t, "Succeeded", st.Plan.Phase)
	for typ, want := range map[string]metav1.ConditionStatus{
		v1alpha1.ConditionAvailable: metav1.ConditionTrue, v1alpha1.ConditionProgressing: metav1.ConditionFalse, v1alpha1.ConditionFailing: metav1.ConditionFalse,
	} {
		cond := meta.FindStatusCondition(st.Conditions, typ)
		if assert.NotNil(t, cond, "condition %s", typ) {
			assert.Equal(t, want, cond.Status, "condition %s: %s", typ, cond.Message)
		}
	}
	// Every component ran once per hop that changes it.
	type hc struct {
		hop  int
		name string
	}
	seen := map[hc]int{}
	for _, r := range op.runner.Records() {
		seen[hc{r.Hop, r.Component}]++
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, "component %s ran %d times on hop %d", k.name, n, k.hop)
	}
	assert.Len(t, seen, st.Plan.Progress.Total)
	// Events, as StarlingX's Deploy* set.
	require.Eventually(t, func() bool {
		rs := eventReasons(t, c, ns)
		return slices.Contains(rs, "UpgradeCompleted") && countOf(rs, "HopCompleted") == 3
	}, 10*time.Second, 100*time.Millisecond, "Events UpgradeStarted, 3 HopCompleted, UpgradeCompleted; got %v", eventReasons(t, c, ns))
	rs := eventReasons(t, c, ns)
	assert.Equal(t, 1, countOf(rs, "UpgradeStarted"), "events %v", rs)
	assert.Zero(t, countOf(rs, "UpgradeFailed"), "events %v", rs)
	// Their notes: each hop, once, with its duration; then the upgrade's.
	const dur = `((?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?m?s)` // time.Duration.String of a duration rounded to the millisecond
	upgraded := regexp.MustCompile(`^upgraded v26\.06-rc\.2 -> v26\.09 in ` + dur + `$`)
	notes := eventNotes(t, c, ns, "UpgradeCompleted")
	require.Len(t, notes, 1)
	m := upgraded.FindStringSubmatch(notes[0])
	require.NotNil(t, m, "UpgradeCompleted note %q, want it to match %s", notes[0], upgraded)
	total, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	hopDone := regexp.MustCompile(`^hop ([1-3]) of 3 (\S+ -> \S+) completed in ` + dur + `$`)
	hops := map[string]string{}
	for _, n := range eventNotes(t, c, ns, "HopCompleted") {
		m := hopDone.FindStringSubmatch(n)
		if !assert.NotNil(t, m, "HopCompleted note %q, want it to match %s", n, hopDone) {
			continue
		}
		assert.NotContains(t, hops, m[1], "hop %s completed twice", m[1])
		hops[m[1]] = m[2]
		d, err := time.ParseDuration(m[3])
		if assert.NoError(t, err) {
			assert.LessOrEqual(t, d, total, "hop %s took %s, the whole upgrade %s", m[1], d, total)
		}
	}
	assert.Equal(t, map[string]string{"1": st.Plan.Hops[0], "2": st.Plan.Hops[1], "3": st.Plan.Hops[2]}, hops, "HopCompleted notes name the plan's hops")
	t.Logf("status writes for the 3-hop upgrade: %d", op.r.StatusWrites())

	// kubectl's printer columns.
	out := kubectl(t, "get", "clusterversion", "-n", ns, "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "kubectl get clusterversion -o wide:\n%s", out)
	assert.Equal(t, []string{"NAME", "DESIRED", "CURRENT", "PHASE", "PROGRESS", "AGE", "HOP", "WAITING"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.GreaterOrEqual(t, len(row), 7, "row %q", lines[1])
	assert.Equal(t, []string{"cluster", "v26.09", "v26.09", "Idle", st.Plan.Progress.Summary}, row[:5])
	// The Waiting column of a finished upgrade is empty.
	assert.Equal(t, "v26.06 -> v26.09", strings.Join(row[6:], " "), "the Hop column names the last hop, and nothing waits: %q", lines[1])
	out = kubectl(t, "get", "clusterversion", "-n", ns)
	assert.Equal(t, []string{"NAME", "DESIRED", "CURRENT", "PHASE", "PROGRESS", "AGE"}, strings.Fields(strings.Split(out, "\n")[0]), "Hop and Waiting only with -o wide")
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// kubectl runs kubectl against the test API server.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	user, err := testEnv.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kc, err := user.Kubectl()
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")); err != nil {
		p, lerr := exec.LookPath("kubectl")
		if lerr != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("no kubectl in KUBEBUILDER_ASSETS nor on PATH")
			}
			t.Skip(`no kubectl: eval "$(tools/env.sh kube)"`)
		}
		kc.Path = p
	}
	stdout, stderr, err := kc.Run(args...)
	so, _ := io.ReadAll(stdout)
	se, _ := io.ReadAll(stderr)
	require.NoError(t, err, "kubectl %v: %s", args, se)
	return string(so)
}
