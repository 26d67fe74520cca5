package controller_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// withoutWebhook keeps the validating webhook away from namespace ns, as
// in a cluster that does not install it (the
// reconciler does not need it): the webhook configuration skips
// namespaces labelled hopdag.io/test-webhook=off.
func withoutWebhook(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	var n corev1.Namespace
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: ns}, &n))
	n.Labels = map[string]string{"hopdag.io/test-webhook": "off"}
	require.NoError(t, c.Update(ctx, &n))
	var wc admissionv1.ValidatingWebhookConfiguration
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, &wc))
	for i := range wc.Webhooks {
		wc.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "hopdag.io/test-webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"off"}},
		}}
	}
	require.NoError(t, c.Update(ctx, &wc))
}

// TestNewTargetMidRun: without the webhook, a new target set while a run
// goes stops the run once its hop has finished, as an abort does, and the
// history entry, Progressing and the Event say that it was redirected to
// the new target, which then runs from where the system is. (They said
// "aborted: desiredVersion set back to v26.06-rc.2", the version the
// upgrade started from, when it was set to v26.06.1.)
func TestNewTargetMidRun(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	withoutWebhook(t, c, ns)
	applyCatalog(t, c, ns, catalogDir)
	rn := runnertest.New().Script("provider", runnertest.Script{Delay: 1500 * time.Millisecond})
	started := startedOn(rn, 0, "provider")
	startOperator(t, opConfig{rn: rn})
	ctx := context.Background()
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	await(t, started, "provider starting on hop 1")

	setSpec(t, c, key, func(s *v1alpha1.ClusterVersionSpec) { s.DesiredVersion = "v26.06.1" })
	got := waitFor(t, c, key, 60*time.Second, "at v26.06.1", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.06.1"
	})
	require.Len(t, got.Status.History, 2, "the redirected upgrade, then the one to the new target")
	h := got.Status.History[1]
	assert.Equal(t, v1alpha1.HistoryPartial, h.State)
	assert.Equal(t, "v26.09", h.To)
	want := "redirected at 7/19: desiredVersion changed from v26.09 to v26.06.1; the upgrade to v26.09 stopped once the hop in progress finished, and the upgrade to v26.06.1 starts from v26.06-rc.3, which the system runs"
	assert.Equal(t, want, h.Message, "history of the redirected upgrade")
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State)
	assert.Equal(t, "v26.06-rc.3", got.Status.History[0].From, "the new target's upgrade starts where the hop ended")
	p := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionProgressing)
	require.NotNil(t, p)
	assert.Equal(t, "AsExpected", p.Reason, p.Message)
	require.Eventually(t, func() bool { return slices.Contains(eventNotes(t, c, ns, "UpgradeRedirected"), want) }, 10*time.Second, 100*time.Millisecond,
		"an UpgradeRedirected Event: %q", want)
	assert.NotContains(t, eventReasons(t, c, ns), "UpgradeAborted")
	require.NoError(t, c.Delete(ctx, got))
}
