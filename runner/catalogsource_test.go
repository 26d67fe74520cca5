package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// The plan's catalog source reaches the status; a resumed run refuses a
// different bundle under the same reference, naming both digests, and
// accepts the same one, recording whether this run's bundle was cached.
func TestCatalogSourceResume(t *testing.T) {
	const ref = "oci://localhost:5000/hopdag/catalog:v26"
	p := plan1(t, c("a"), c("b", "a"))
	p.Catalog = runner.CatalogSource{Ref: ref, Digest: "sha256:aaa"}
	fake := runnertest.New().Script("b", runnertest.Script{FailFirst: 1})
	e := runner.New(fake)
	st1, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, p.Catalog, st1.Catalog, "Status.Catalog")

	for _, tc := range []struct {
		name    string
		src     runner.CatalogSource
		wantErr string
	}{
		{"other digest under the same ref", runner.CatalogSource{Ref: ref, Digest: "sha256:bbb"},
			"catalog " + ref + " was sha256:aaa when this run started and is sha256:bbb now"},
		{"same digest from the cache", runner.CatalogSource{Ref: ref, Digest: "sha256:aaa", Cached: true, Note: "registry unreachable"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p2 := *p
			p2.Catalog = tc.src
			st2, err := e.Execute(context.Background(), &p2, st1)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, runner.ErrPlanMismatch)
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.src, st2.Catalog, "Status.Catalog after resume")
		})
	}
}

// The dry run names the catalog source only when there is one.
func TestPlanShowsCatalogSource(t *testing.T) {
	p := plan1(t, c("a"))
	assert.NotContains(t, p.String(), "catalog:")
	p.Catalog = runner.CatalogSource{Ref: "oci://r/c:t", Digest: "sha256:abc"}
	assert.Contains(t, p.String(), "catalog: oci://r/c:t (sha256:abc)\n")
	data, err := p.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(data), `"catalog":{"ref":"oci://r/c:t","digest":"sha256:abc"}`)
}
