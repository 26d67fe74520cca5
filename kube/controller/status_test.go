package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// chain describes a generated catalog: versions v1.0.0, v1.0.1, ... in a
// chain (one rule from each to the next), each shipping the components
// c000, c001, ... at v1.0 in the first release and v2.0 in the others, so
// that only the first hop changes components.
type chain struct {
	versions, components int
	// risky, when not 0, puts a risk on the rule into version risky.
	risky int
	// riskURLs, when not 0, makes that ten risks, each with a URL of
	// riskURLs bytes.
	riskURLs int
}

func chainVersion(i int) string { return fmt.Sprintf("v1.%d.%d", i/100, i%100) }

// create creates the catalog's objects in ns, on 8 goroutines.
func (ch chain) create(t *testing.T, c client.Client, ns string) {
	t.Helper()
	var objs []client.Object
	refs := func(v string) []v1alpha1.ComponentRef {
		var out []v1alpha1.ComponentRef
		for j := range ch.components {
			out = append(out, v1alpha1.ComponentRef{Name: fmt.Sprintf("c%03d", j), Version: v1alpha1.Version(v)})
		}
		return out
	}
	for j := range ch.components {
		for _, v := range []string{"v1.0", "v2.0"} {
			name := fmt.Sprintf("c%03d", j)
			objs = append(objs, &v1alpha1.ComponentVersion{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + v[:2]},
				Spec:       v1alpha1.ComponentVersionSpec{Name: name, Version: v1alpha1.Version(v), Handler: name},
			})
		}
	}
	var rules []v1alpha1.Rule
	for i := range ch.versions {
		comp := "v2.0"
		if i == 0 {
			comp = "v1.0"
		}
		objs = append(objs, &v1alpha1.Release{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%04d", i)},
			Spec:       v1alpha1.ReleaseSpec{Version: v1alpha1.Version(chainVersion(i)), Components: refs(comp)},
		})
		if i > 0 {
			r := v1alpha1.Rule{From: chainVersion(i - 1), To: v1alpha1.Version(chainVersion(i))}
			switch {
			case i == ch.risky && ch.riskURLs > 0:
				for k := range 10 {
					url := fmt.Sprintf("https://docs.example/risk-%d/", k)
					r.Risks = append(r.Risks, v1alpha1.Risk{Name: fmt.Sprintf("risk-%d", k), URL: url + strings.Repeat("x", ch.riskURLs-len(url))})
				}
			case i == ch.risky:
				r.Risks = []v1alpha1.Risk{{Name: "risky-edge", Message: "the edge into " + chainVersion(i) + " is risky"}}
			}
			rules = append(rules, r)
		}
	}
	objs = append(objs, &v1alpha1.UpgradePath{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chain"}, Spec: v1alpha1.UpgradePathSpec{Rules: rules}})
	work := make(chan client.Object)
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	for range 8 {
		wg.Go(func() {
			for o := range work {
				if err := c.Create(context.Background(), o); err != nil {
					errs <- fmt.Errorf("creating %s: %w", o.GetName(), err)
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// statusOf reads the ClusterVersion's status as the API server stores it
// (unstructured: what is there, whatever the Go type says) and its size
// in bytes of JSON.
func statusOf(t *testing.T, c client.Client, key client.ObjectKey) (map[string]any, int) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ClusterVersion"))
	require.NoError(t, c.Get(context.Background(), key, u))
	st, _, err := unstructured.NestedMap(u.Object, "status")
	require.NoError(t, err)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	return st, len(b)
}

// TestLongChainStatusStaysSmall: on a catalog of a 4,000-version chain,
// a one-hop upgrade starts and completes, and the status stays small:
// availableUpdates and conditionalUpdates list at most 100 targets each,
// with their hop count and next hop, and count the ones left out. (Each
// target's whole route was listed: the status grew with the square of the
// versions, 2.46 MB at 700, which the API server refuses; the status
// stayed empty and no upgrade started.)
func TestLongChainStatusStaysSmall(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	const n, risky = 4000, 3990 // the targets from risky on are behind a risk
	chain{versions: n, components: 1, risky: risky}.create(t, c, ns)
	startOperator(t, opConfig{})
	ctx := context.Background()
	cv := newCV(ns, chainVersion(0), chainVersion(1))
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)

	const limit = 64 << 10
	var size int
	var st map[string]any
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st, size = statusOf(t, c, key)
		av, _, _ := unstructured.NestedSlice(st, "availableUpdates")
		if st["currentVersion"] == chainVersion(1) && st["phase"] == string(v1alpha1.PhaseIdle) &&
			len(av) > 0 && av[0].(map[string]any)["next"] == chainVersion(1)+" -> "+chainVersion(2) { // the updates from there
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterVersion %s: not upgraded to %s after 3m; status (%d bytes) phase %v, conditions %v", key, chainVersion(1), size, st["phase"], st["conditions"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("status at %s of a %d-version chain: %d bytes", chainVersion(1), n, size)
	assert.LessOrEqual(t, size, limit, "status of a %d-version chain is %d bytes, want at most %d", n, size, limit)

	// From v1.0.1: 3,988 targets without the risk, 10 behind it.
	av, _, _ := unstructured.NestedSlice(st, "availableUpdates")
	cu, _, _ := unstructured.NestedSlice(st, "conditionalUpdates")
	moreAv, _, _ := unstructured.NestedInt64(st, "availableUpdatesOmitted")
	moreCu, _, _ := unstructured.NestedInt64(st, "conditionalUpdatesOmitted")
	assert.Len(t, av, 100, "availableUpdates lists at most 100")
	assert.Equal(t, int64(risky-2-100), moreAv, "availableUpdatesOmitted: %d targets, %d listed", risky-2, len(av))
	assert.Len(t, cu, n-risky, "conditionalUpdates: the targets behind the risk")
	assert.Zero(t, moreCu, "conditionalUpdatesOmitted")
	var versions []string
	for _, u := range av {
		m := u.(map[string]any)
		versions = append(versions, m["version"].(string))
	}
	// The newest, and the 99 nearest.
	want := []string{}
	for i := 2; i <= 100; i++ {
		want = append(want, chainVersion(i))
	}
	want = append(want, chainVersion(risky-1))
	assert.Equal(t, want, versions, "availableUpdates: the 99 nearest targets and the newest")
	if len(av) > 0 {
		last := av[len(av)-1].(map[string]any)
		assert.Equal(t, map[string]any{"version": chainVersion(risky - 1), "hops": int64(risky - 2), "next": chainVersion(1) + " -> " + chainVersion(2)}, last)
	}
	if len(cu) > 0 {
		first := cu[0].(map[string]any)
		assert.Equal(t, chainVersion(risky), first["version"])
		assert.Equal(t, []any{map[string]any{"name": "risky-edge", "message": "the edge into " + chainVersion(risky) + " is risky"}}, first["risks"])
	}
	require.Eventually(t, func() bool {
		r := eventReasons(t, c, ns)
		return slices.Contains(r, "UpgradeStarted") && slices.Contains(r, "UpgradeCompleted")
	}, 10*time.Second, 100*time.Millisecond, "UpgradeStarted and UpgradeCompleted Events")
}

// TestOversizedUpdatesDoNotStopTheUpgrade: risks whose URLs are long
// (ten of 3,000 bytes on an edge that 100 listed targets route through)
// would make the status 3 MB, which the API server refuses: the status
// write failed and the upgrade never started, with nothing on the
// ClusterVersion. The lists are left out instead, counted in the omitted
// fields, and the StatusTrimmed condition says why and where to see them;
// the upgrade runs.
func TestOversizedUpdatesDoNotStopTheUpgrade(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	const n, risky = 120, 5
	chain{versions: n, components: 1, risky: risky, riskURLs: 3000}.create(t, c, ns)
	startOperator(t, opConfig{})
	ctx := context.Background()
	cv := newCV(ns, chainVersion(0), chainVersion(1))
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 2*time.Minute, "upgraded, its status trimmed", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.CurrentVersion == chainVersion(1) && cv.Status.Phase == v1alpha1.PhaseIdle &&
			meta.IsStatusConditionTrue(cv.Status.Conditions, v1alpha1.ConditionStatusTrimmed)
	})
	_, size := statusOf(t, c, key)
	assert.LessOrEqual(t, size, 512<<10, "status bytes")
	assert.Empty(t, got.Status.AvailableUpdates)
	assert.Empty(t, got.Status.ConditionalUpdates)
	// From v1.0.1: v1.0.2 to v1.0.4 without the risk, 115 behind it.
	assert.Equal(t, risky-2, got.Status.AvailableUpdatesOmitted)
	assert.Equal(t, n-risky, got.Status.ConditionalUpdatesOmitted)
	tr := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStatusTrimmed)
	assert.Equal(t, "TooLarge", tr.Reason)
	assert.Regexp(t, `^status.availableUpdates \(3\) and status.conditionalUpdates \(115\) are left out: with them the status is [0-9]+ bytes, more than the 524288 this reconciler writes \(the API server refuses an object over about 1.5 MiB\); the catalog's risks or versions are spelled too long for a status \(shorten the risks' urls and messages\); list the targets with hopdag targets on the catalog$`, tr.Message)
	require.Eventually(t, func() bool {
		r := eventReasons(t, c, ns)
		return slices.Contains(r, "UpgradeStarted") && slices.Contains(r, "UpgradeCompleted")
	}, 10*time.Second, 100*time.Millisecond, "UpgradeStarted and UpgradeCompleted Events")
}
