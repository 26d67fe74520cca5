package controller_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/store"
)

// newKubeStore is store.New's store, which must be one.
func newKubeStore(t *testing.T, c client.Client, ns, name string) *store.Store {
	t.Helper()
	s, err := store.New(c, ns, name)
	require.NoError(t, err, "store.New(%q, %q)", ns, name)
	return s
}
