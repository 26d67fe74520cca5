package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hopdag/hopdag/kube/store"
)

// TestNames: the names this operator derives from a ClusterVersion's are
// valid wherever they go, whatever its name (a ClusterVersion's name may
// be 253 characters and hold dots), and keep their short form when they
// can (a store or an instance renamed would lose its record or its
// objects' inventory).
func TestNames(t *testing.T) {
	tests := []struct {
		cv                  types.NamespacedName
		instance, storeName string // "" when hashed
	}{
		{cv: types.NamespacedName{Namespace: "demo", Name: "cluster"}, instance: "demo-cluster", storeName: "hopdag-cluster"},
		{cv: types.NamespacedName{Namespace: "demo", Name: strings.Repeat("c", 56)}, storeName: "hopdag-" + strings.Repeat("c", 56)},
		{cv: types.NamespacedName{Namespace: "demo", Name: strings.Repeat("c", 57)}},
		{cv: types.NamespacedName{Namespace: "demo", Name: "prod.eu-west." + strings.Repeat("c", 240)}},
		{cv: types.NamespacedName{Namespace: "demo", Name: "prod.eu"}, storeName: "hopdag-prod.eu"},
	}
	for _, tt := range tests {
		t.Run(tt.cv.Name, func(t *testing.T) {
			inst, name := instanceOf(tt.cv), storeName(tt.cv)
			if tt.instance != "" {
				assert.Equal(t, tt.instance, inst, "instanceOf(%s)", tt.cv)
			} else {
				assert.True(t, strings.HasPrefix(inst, "cv-"), "instanceOf(%s) = %q, want a hash", tt.cv, inst)
			}
			if tt.storeName != "" {
				assert.Equal(t, tt.storeName, name, "storeName(%s)", tt.cv)
			} else {
				assert.True(t, strings.HasPrefix(name, "hopdag-cv-"), "storeName(%s) = %q, want a hash", tt.cv, name)
			}
			assert.LessOrEqual(t, len(inst), 40, "len(instanceOf(%s))", tt.cv)
			assert.Empty(t, validation.IsDNS1123Label(inst), "instanceOf(%s) = %q", tt.cv, inst)
			assert.Empty(t, validation.IsValidLabelValue(name), "storeName(%s) = %q as a label value", tt.cv, name)
			assert.Empty(t, validation.IsDNS1123Subdomain(name), "storeName(%s) = %q as an object name", tt.cv, name)
			_, err := store.New(nil, tt.cv.Namespace, name)
			assert.NoError(t, err, "store.New with storeName(%s)", tt.cv)
		})
	}
	long := types.NamespacedName{Namespace: "demo", Name: strings.Repeat("c", 57)}
	other := types.NamespacedName{Namespace: "other", Name: long.Name}
	assert.NotEqual(t, storeName(long), storeName(other), "hashed store names of %s and %s", long, other)
}
