package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/runner"
	"github.com/hopdag/hopdag/runner/runnertest"
)

// The plan's catalog source reaches the status. A resumed run refuses a
// plan whose bundle has another digest, whatever reference names it (the
// same tag, another digest pinned, another layout), and a plan from a
// directory, which has no digest to compare; each error names the
// recorded reference and digest and says how to resume. It accepts the
// same digest under any reference (a tag or the digest, the registry or
// an exported layout, from the cache), and the status then records the
// source this run used.
func TestCatalogSourceResume(t *testing.T) {
	const (
		ref    = "oci://localhost:5000/hopdag/catalog:v26"
		digest = "sha256:aaa"
	)
	p := plan1(t, c("a"), c("b", "a"))
	p.Catalog = record.CatalogSource{Ref: ref, Digest: digest}
	fake := runnertest.New().Script("b", runnertest.Script{FailFirst: 1})
	e := runner.New(fake)
	st1, err := e.Execute(context.Background(), p, nil)
	require.ErrorIs(t, err, runner.ErrRunFailed)
	assert.Equal(t, p.Catalog, st1.Catalog, "Status.Catalog")

	resume := "resume with the bundle pinned by digest (" + ref + "@" + digest + "), or start over with no previous status"
	for _, tc := range []struct {
		name    string
		src     record.CatalogSource
		wantErr []string // each in the error; none: the resume is accepted
	}{
		{"other digest under the same ref", record.CatalogSource{Ref: ref, Digest: "sha256:bbb"},
			[]string{"catalog " + ref + " was " + digest + " when this run started and is sha256:bbb now", resume}},
		{"other digest pinned", record.CatalogSource{Ref: "oci://localhost:5000/hopdag/catalog@sha256:bbb", Digest: "sha256:bbb"},
			[]string{"catalog oci://localhost:5000/hopdag/catalog@sha256:bbb (sha256:bbb) is not the bundle this run started from, " + ref + " (" + digest + ")", resume}},
		{"other digest in a layout", record.CatalogSource{Ref: "oci-layout://lay@sha256:bbb", Digest: "sha256:bbb"},
			[]string{"oci-layout://lay@sha256:bbb (sha256:bbb)", ref + " (" + digest + ")", resume}},
		{"a directory", record.CatalogSource{},
			[]string{"this run started from catalog bundle " + ref + " (" + digest + ") and the plan's catalog is a directory, which has no digest to compare", resume}},
		{"same digest from the cache", record.CatalogSource{Ref: ref, Digest: digest, Cached: true, Note: "registry unreachable"}, nil},
		{"same digest pinned", record.CatalogSource{Ref: "oci://localhost:5000/hopdag/catalog@" + digest, Digest: digest}, nil},
		{"same digest in an exported layout", record.CatalogSource{Ref: "oci-layout://offline.tar:v26", Digest: digest}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p2 := *p
			p2.Catalog = tc.src
			st2, err := e.Execute(context.Background(), &p2, st1)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, runner.ErrPlanMismatch)
				for _, want := range tc.wantErr {
					assert.ErrorContains(t, err, want)
				}
				assert.Equal(t, st1.Catalog, st2.Catalog, "a refused resume leaves the status's source")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.src, st2.Catalog, "Status.Catalog after resume is the source this run used")
		})
	}
}

// The resume hint pins the recorded reference by its digest, replacing a
// digest the reference already had.
func TestCatalogSourceResumeHint(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"oci://r/c:t", "oci://r/c:t@sha256:aaa"},
		{"oci://r/c@sha256:aaa", "oci://r/c@sha256:aaa"},
		{"oci://r/c:t@sha256:aaa", "oci://r/c:t@sha256:aaa"},
		{"oci-layout://lay@sha256:aaa", "oci-layout://lay@sha256:aaa"},
		{"oci-layout:///tmp/a@b/lay:v1", "oci-layout:///tmp/a@b/lay:v1@sha256:aaa"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			p := plan1(t, c("a"))
			p.Catalog = record.CatalogSource{Ref: tc.ref, Digest: "sha256:aaa"}
			e := runner.New(runnertest.New().Script("a", runnertest.Script{FailFirst: 1}))
			st, err := e.Execute(context.Background(), p, nil)
			require.ErrorIs(t, err, runner.ErrRunFailed)
			p.Catalog = record.CatalogSource{Ref: tc.ref, Digest: "sha256:bbb"}
			_, err = e.Execute(context.Background(), p, st)
			require.ErrorIs(t, err, runner.ErrPlanMismatch)
			assert.ErrorContains(t, err, "pinned by digest ("+tc.want+")")
		})
	}
}

// The dry run names the catalog source only when there is one.
func TestPlanShowsCatalogSource(t *testing.T) {
	p := plan1(t, c("a"))
	assert.NotContains(t, p.String(), "catalog:")
	p.Catalog = record.CatalogSource{Ref: "oci://r/c:t", Digest: "sha256:abc"}
	assert.Contains(t, p.String(), "catalog: oci://r/c:t (sha256:abc)\n")
	data, err := p.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(data), `"catalog":{"ref":"oci://r/c:t","digest":"sha256:abc"}`)
}
