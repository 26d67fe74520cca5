package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// need returns the value of the environment variable name, skipping the
// test without it (failing it with CI=true) with how to get it.
func need(t *testing.T, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := "no " + what + `: set ` + name + ` (eval "$(tools/env.sh)")`
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}

// rendered is kubectl kustomize of kube/config/default, decoded.
func rendered(t *testing.T) []*unstructured.Unstructured { return kustomized(t, "default") }

// kustomized is kubectl kustomize of kube/config/DIR, decoded.
func kustomized(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	kubectl := need(t, "HOPDAG_KUBECTL", "kubectl")
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", "../../config/"+dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize kube/config/%s: %s", dir, stderr.String())
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// find returns the rendered object of that kind and name.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("kube/config/default renders no %s %s", kind, name)
	return nil
}

// TestConfigDefaultRenders: kube/config/default renders an operator one
// can deploy: its namespace, the CRDs, a ServiceAccount bound to the
// ClusterRole and to a leader-election Role, a Deployment that runs
// non-root with a read-only root filesystem, probes and leader election,
// serving the webhook with cert-manager's certificate through the
// Service the webhook configuration names.
func TestConfigDefaultRenders(t *testing.T) {
	objs := rendered(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+" "+o.GetName())
	}
	for _, want := range []string{
		"Namespace hopdag-system", "CustomResourceDefinition clusterversions.hopdag.io", "ServiceAccount hopdag-operator",
		"ClusterRole hopdag-operator", "ClusterRoleBinding hopdag-operator", "Role hopdag-leader-election", "RoleBinding hopdag-leader-election",
		"Deployment hopdag-operator", "Service webhook-service", "ValidatingWebhookConfiguration hopdag-validating-webhook",
		"Issuer hopdag-selfsigned", "Certificate hopdag-serving-cert",
	} {
		assert.Contains(t, kinds, want)
	}
	for _, o := range objs {
		if o.GetKind() != "Namespace" && o.GetNamespace() != "" {
			assert.Equal(t, "hopdag-system", o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}

	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "Deployment", "hopdag-operator").Object, &d))
	pod := d.Spec.Template.Spec
	assert.Equal(t, "hopdag-operator", pod.ServiceAccountName)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, *sc.ReadOnlyRootFilesystem, "read-only root filesystem")
	assert.False(t, *sc.AllowPrivilegeEscalation, "no privilege escalation")
	assert.Equal(t, "ALL", string(sc.Capabilities.Drop[0]))
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.NotNil(t, c.Resources.Requests.Cpu(), "resource requests")
	for _, arg := range []string{"--leader-elect", "--leader-election-namespace=$(POD_NAMESPACE)", "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080"} {
		assert.Contains(t, c.Args, arg)
	}
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.Name+" "+m.MountPath)
	}
	assert.Contains(t, mounts, "webhook-cert /tmp/k8s-webhook-server/serving-certs")
	var secret string
	for _, v := range pod.Volumes {
		if v.Name == "webhook-cert" && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	cert := find(t, objs, "Certificate", "hopdag-serving-cert")
	name, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	assert.Equal(t, name, secret, "the Deployment mounts the Secret the Certificate fills")
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	assert.Contains(t, dns, "webhook-service.hopdag-system.svc", "the certificate names the webhook's Service")

	wh := find(t, objs, "ValidatingWebhookConfiguration", "hopdag-validating-webhook")
	hooks, _, _ := unstructured.NestedSlice(wh.Object, "webhooks")
	require.Len(t, hooks, 1)
	svc, _, _ := unstructured.NestedStringMap(hooks[0].(map[string]any), "clientConfig", "service")
	assert.Equal(t, "webhook-service", svc["name"])
	assert.Equal(t, "hopdag-system", svc["namespace"])
	assert.Equal(t, "hopdag-system/hopdag-serving-cert", wh.GetAnnotations()["cert-manager.io/inject-ca-from"])
}

// TestConfigDefaultApplies applies what kube/config/default renders to a
// real API server: the namespace, the CRDs and the RBAC for real, the
// rest with a server-side dry run (cert-manager's kinds are left out: the
// test API server has no cert-manager). The operator's ServiceAccount,
// impersonated, may make the requests of an upgrade and of leader
// election (kube/controller TestGeneratedRoleSuffices runs a whole
// upgrade under the same ClusterRole), and nothing cluster-wide it does
// not need.
func TestConfigDefaultApplies(t *testing.T) {
	objs := rendered(t)
	need(t, "KUBEBUILDER_ASSETS", "API server")
	env := &envtest.Environment{}
	cfg, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	real := []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	for pass, dry := range []bool{false, true} {
		for _, o := range objs {
			switch {
			case strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/"):
				continue
			case slices.Contains(real, o.GetKind()) == dry:
				continue
			}
			opts := []client.ApplyOption{client.FieldOwner("hopdag-test"), client.ForceOwnership}
			if dry {
				opts = append(opts, client.DryRunAll)
			}
			u := o.DeepCopy()
			u.SetManagedFields(nil)
			require.NoError(t, c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...), "pass %d: applying %s %s", pass, o.GetKind(), o.GetName())
		}
	}

	sa := "system:serviceaccount:hopdag-system:hopdag-operator"
	can := func(ns, verb, group, resource, sub string) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:hopdag-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub}}}
		require.NoError(t, c.Create(ctx, sar))
		return sar.Status.Allowed
	}
	for _, r := range []struct{ ns, verb, group, resource, sub string }{
		{"demo", "watch", "hopdag.io", "clusterversions", ""},
		{"demo", "update", "hopdag.io", "clusterversions", "status"},
		{"demo", "update", "hopdag.io", "clusterversions", "finalizers"},
		{"demo", "patch", "hopdag.io", "clusterversions", ""},
		{"demo", "list", "hopdag.io", "releases", ""},
		{"demo", "list", "hopdag.io", "componentversions", ""},
		{"demo", "list", "hopdag.io", "upgradepaths", ""},
		{"demo", "create", "", "configmaps", ""},
		{"demo", "delete", "", "configmaps", ""},
		{"demo", "update", "coordination.k8s.io", "leases", ""},
		{"demo", "create", "events.k8s.io", "events", ""},
		{"hopdag-system", "update", "coordination.k8s.io", "leases", ""},
	} {
		// The API server answers from its RBAC cache, a moment behind
		// the roles and bindings just applied.
		assert.Eventually(t, func() bool { return can(r.ns, r.verb, r.group, r.resource, r.sub) }, 10*time.Second, 50*time.Millisecond,
			"the operator may %s %s %s/%s in %q", r.verb, r.group, r.resource, r.sub, r.ns)
	}
	for _, r := range []struct{ ns, verb, group, resource, sub string }{
		{"", "list", "", "secrets", ""},
		{"kube-system", "get", "", "secrets", ""},
		{"", "delete", "", "nodes", ""},
		{"", "create", "rbac.authorization.k8s.io", "clusterrolebindings", ""},
		{"demo", "create", "", "pods", "exec"},
		{"", "delete", "", "namespaces", ""},
		{"", "update", "apiextensions.k8s.io", "customresourcedefinitions", ""},
	} {
		assert.False(t, can(r.ns, r.verb, r.group, r.resource, r.sub), "the operator must not %s %s %s/%s in %q", r.verb, r.group, r.resource, r.sub, r.ns)
	}
	var role rbacv1.ClusterRole
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "hopdag-operator"}, &role))
	for _, rule := range role.Rules {
		assert.NotContains(t, rule.Verbs, "*", "a wildcard verb in %+v", rule)
		assert.NotContains(t, rule.Resources, "*", "a wildcard resource in %+v", rule)
		assert.NotContains(t, rule.APIGroups, "*", "a wildcard group in %+v", rule)
	}
}

// TestSamplesApply: the samples (a ClusterVersion and an UpgradeRollout)
// are valid objects of the CRDs: a server-side dry run accepts them.
func TestSamplesApply(t *testing.T) {
	objs := kustomized(t, "samples")
	need(t, "KUBEBUILDER_ASSETS", "API server")
	env := &envtest.Environment{CRDDirectoryPaths: []string{"../../config/crd"}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	var kinds []string
	for _, o := range objs {
		u := o.DeepCopy()
		u.SetNamespace("default")
		require.NoError(t, c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("hopdag-test"), client.DryRunAll), "%s %s", o.GetKind(), o.GetName())
		kinds = append(kinds, o.GetKind())
	}
	assert.ElementsMatch(t, []string{"ClusterVersion", "UpgradeRollout"}, kinds)
}
