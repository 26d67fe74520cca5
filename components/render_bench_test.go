package components_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
)

// BenchmarkRender renders coredns from testdata/catalog (3 objects).
func BenchmarkRender(b *testing.B) {
	c := loadCatalog(b)
	from, to := cvOf(b, c, "coredns", "v1.12.0"), cvOf(b, c, "coredns", "v1.12.1")
	m := components.NewManifest(components.NewRecorder(), components.WithValues(testValues))
	t := task(from, to, hop("v26.06", "v26.06.1"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Render(t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunLarge runs a manifest of 1,000 objects whose previous version
// had 1,000 others: render both, apply, prune.
func BenchmarkRunLarge(b *testing.B) {
	gen := func(version, prefix string) *release.ComponentVersion {
		var tpl strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&tpl, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\n  namespace: ns\ndata:\n  v: \"{{ .Component.Version }}\"\n", prefix, i)
		}
		return manifestCV("app", version, tpl.String())
	}
	from, to := gen("v1.0.0", "old"), gen("v1.1.0", "new")
	t := task(from, to, nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := components.NewRecorder()
		if err := components.NewManifest(rec).Run(context.Background(), t); err != nil {
			b.Fatal(err)
		}
		if n := len(rec.Actions()); n != 2000 {
			b.Fatalf("%d actions, want 2000", n)
		}
	}
}
