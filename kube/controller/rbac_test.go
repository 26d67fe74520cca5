package controller_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/store"
	"github.com/hopdag/hopdag/state"
)

// TestGeneratedRoleSuffices runs an upgrade with the operator acting as a
// ServiceAccount bound to kube/config/rbac/role.yaml and nothing else:
// its manager (leader election, the watches), the kube/store record and
// lock, the status writes and the Events all stay within the generated
// ClusterRole. The API server enforces RBAC (checked first: the account
// may not read Secrets), so a permission the markers miss fails the
// upgrade.
func TestGeneratedRoleSuffices(t *testing.T) {
	needAPIServer(t)
	c := newClient(t)
	ns := newNamespace(t, c)
	applyCatalog(t, c, ns, catalogDir)
	ctx := context.Background()

	b, err := os.ReadFile("../config/rbac/role.yaml")
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal(b, &role))
	require.Equal(t, "hopdag-operator", role.Name)
	role.Name = "hopdag-operator-" + ns // the tests share the API server
	require.NoError(t, c.Create(ctx, &role))
	t.Cleanup(func() { _ = c.Delete(context.Background(), &role) })
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hopdag"}}
	require.NoError(t, c.Create(ctx, sa))
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	require.NoError(t, c.Create(ctx, binding))
	t.Cleanup(func() { _ = c.Delete(context.Background(), binding) })

	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":hopdag"}
	asClient, err := client.New(as, client.Options{Scheme: scheme})
	require.NoError(t, err)
	err = asClient.List(ctx, &corev1.SecretList{}, client.InNamespace(ns))
	require.True(t, apierrors.IsForbidden(err), "the API server must enforce RBAC for this test to show anything: listing Secrets as the ServiceAccount gave %v", err)

	stores := func(k types.NamespacedName) (state.Store, state.Lock, error) {
		s, err := store.New(asClient, k.Namespace, "hopdag-"+k.Name)
		return s, s, err
	}
	startOperator(t, opConfig{cfg: as, stores: stores, leaderNS: ns})
	cv := newCV(ns, "v26.06-rc.2", "v26.09")
	require.NoError(t, c.Create(ctx, cv))
	key := client.ObjectKeyFromObject(cv)
	got := waitFor(t, c, key, 90*time.Second, "upgraded under the generated role", func(cv *v1alpha1.ClusterVersion) bool {
		return cv.Status.Phase == v1alpha1.PhaseIdle && cv.Status.CurrentVersion == "v26.09"
	})
	assert.Equal(t, v1alpha1.HistoryCompleted, got.Status.History[0].State)
	require.Eventually(t, func() bool {
		for _, r := range eventReasons(t, c, ns) {
			if r == "UpgradeCompleted" {
				return true
			}
		}
		return false
	}, 10*time.Second, 100*time.Millisecond, "the ServiceAccount's UpgradeCompleted Event")
	rec, err := newKubeStore(t, c, ns, "hopdag-cluster").Load(ctx)
	require.NoError(t, err)
	require.NotNil(t, rec, "the run's record in kube/store")
	require.NoError(t, c.Delete(ctx, got))
}
