package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An etcd that does not answer fails within a few seconds, saying so in
// one line: not after the client's 20s, nor with its JSON log on stderr.
func TestStateEtcdUnreachable(t *testing.T) {
	binary(t) // built before the clock starts
	for _, args := range [][]string{
		{"status", "--state", "etcd://127.0.0.1:1/x"},
		{"abandon", "--yes", "--state", "etcd://127.0.0.1:1/x"},
		{"run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "out=" + t.TempDir(), "--state", "etcd://127.0.0.1:1/x"},
	} {
		t.Run(args[0], func(t *testing.T) {
			begin := time.Now()
			code, _, stderr := hopdagRun(t, "", args...)
			assert.Less(t, time.Since(begin), 5*time.Second, "hopdag %s gave up on the etcd at once", strings.Join(args, " "))
			assert.Equal(t, exitInvalid, code, stderr)
			assert.Contains(t, stderr, "etcd at 127.0.0.1:1 is unreachable: ")
			assert.Contains(t, stderr, "connection refused")
			assert.NotContains(t, stderr, `{"level"`, "the etcd client's log")
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line:\n%s", stderr)
		})
	}
}

// A kube:// state in a namespace that does not exist says how to create
// it.
func TestStateKubeNamespaceMissing(t *testing.T) {
	err := fmt.Errorf("kube://hopdag-state/demo: state: kube: acquire hopdag-state/demo: %w",
		apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "hopdag-state"))
	assert.Equal(t, `kube://hopdag-state/demo: state: kube: acquire hopdag-state/demo: namespaces "hopdag-state" not found: create it: kubectl create namespace hopdag-state`, message(err))
	other := fmt.Errorf("kube://ns/demo: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "demo"))
	assert.Equal(t, `kube://ns/demo: configmaps "demo" not found`, message(other), "only a missing namespace gets the hint")

	c := startCluster(t)
	code, _, stderr := hopdagRun(t, "", "run", execCatalog, "--from", "v1.0", "--to", "v2.0", "--set", "out="+t.TempDir(),
		"--state", "kube://hopdag-state/demo", "--kubeconfig", c.kubeconfig)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, stderr, `namespaces "hopdag-state" not found: create it: kubectl create namespace hopdag-state`)

	// status finds nothing there, and says why.
	code, _, stderr = hopdagRun(t, "", "status", "--state", "kube://hopdag-state/demo", "--kubeconfig", c.kubeconfig)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, stderr, "no status in kube://hopdag-state/demo: no run has started there (namespace hopdag-state does not exist: check --state, or create it: kubectl create namespace hopdag-state)")
	code, _, stderr = hopdagRun(t, "", "status", "--state", "kube://default/demo", "--kubeconfig", c.kubeconfig)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, stderr, "no status in kube://default/demo: no run has started there\n", "a namespace that exists gets no hint")
}
