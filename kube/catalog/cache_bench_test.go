package catalog_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
)

// BenchmarkCacheLoad loads a catalog of two releases of 1,000 components
// each (2,000 ComponentVersions) from an in-memory client: "built" is what
// every Load cost before the Cache (list and strict load), "cached" a Load
// of unchanged objects (list and fingerprint).
func BenchmarkCacheLoad(b *testing.B) {
	const n = 1000
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	var objs []client.Object
	for _, v := range []string{"v1.0", "v2.0"} {
		r := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r-" + v}, Spec: v1alpha1.ReleaseSpec{Version: v1alpha1.Version(v)}}
		for i := range n {
			name := fmt.Sprintf("c%04d", i)
			r.Spec.Components = append(r.Spec.Components, v1alpha1.ComponentRef{Name: name, Version: v1alpha1.Version(v)})
			objs = append(objs, &v1alpha1.ComponentVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name + "-" + v},
				Spec: v1alpha1.ComponentVersionSpec{Name: name, Version: v1alpha1.Version(v), Type: "inline", Handler: "noop"}})
		}
		objs = append(objs, r)
	}
	objs = append(objs, &v1alpha1.UpgradePath{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: v1alpha1.UpgradePathSpec{Rules: []v1alpha1.Rule{{From: "v1.0", To: "v2.0"}}}})
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	ctx := context.Background()
	b.Run("built", func(b *testing.B) {
		for b.Loop() {
			if _, err := catalog.Load(ctx, c, "ns"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		cache := catalog.NewCache()
		if _, err := cache.Load(ctx, c, "ns"); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := cache.Load(ctx, c, "ns"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
