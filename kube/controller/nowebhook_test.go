package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// noWebhook is the label of namespaces the webhook does not see: the
// README says the reconciler does not need it, and these tests show what
// the reconciler does alone.
const noWebhook = "hopdag.io/test-webhook"

var webhookSelector sync.Once

// namespaceWithoutWebhook creates a namespace that the webhook
// configuration's namespaceSelector leaves out (set once, on first use).
func namespaceWithoutWebhook(t *testing.T, c client.Client) string {
	t.Helper()
	ctx := context.Background()
	webhookSelector.Do(func() {
		var l admissionregistrationv1.ValidatingWebhookConfigurationList
		require.NoError(t, c.List(ctx, &l))
		for i := range l.Items {
			w := &l.Items[i]
			for j := range w.Webhooks {
				w.Webhooks[j].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: noWebhook, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"off"}}}}
			}
			require.NoError(t, c.Update(ctx, w))
		}
	})
	ns := createNamespace(t, c, map[string]string{noWebhook: "off"})
	// The API server applies a selector, and sees a namespace's labels,
	// a moment after they change: until a target the webhook refuses is
	// accepted, it still calls the webhook here.
	probe := newCV(ns, "v26.06-rc.2", "v99.0")
	probe.Name = "probe"
	require.Eventually(t, func() bool { return c.Create(ctx, probe, client.DryRunAll) == nil }, 30*time.Second, 50*time.Millisecond,
		"the webhook still refuses a ClusterVersion in namespace %s, which its selector leaves out", ns)
	return ns
}
