package components_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
)

func obj(kind, ns, name string) components.Object {
	return components.Object{APIVersion: "v1", Kind: kind, Namespace: ns, Name: name}
}

func TestRecorderLog(t *testing.T) {
	ctx := context.Background()
	var r components.Recorder // the zero value works
	opts := components.ApplyOptions{FieldManager: "m"}
	require.NoError(t, r.Apply(ctx, []components.Object{obj("Namespace", "", "a"), obj("ConfigMap", "a", "x")}, opts))
	require.NoError(t, r.Delete(ctx, []components.Object{obj("ConfigMap", "a", "x"), obj("Secret", "a", "never-applied")}))
	require.NoError(t, r.Apply(ctx, []components.Object{obj("ConfigMap", "a", "x")}, opts))

	assert.Equal(t, []string{
		"apply Namespace a", "apply ConfigMap a/x",
		"delete ConfigMap a/x", "delete Secret a/never-applied",
		"apply ConfigMap a/x",
	}, actions(&r), "every apply and delete, object by object, in order")
	assert.Equal(t, opts, r.Actions()[0].Options)
	assert.Equal(t, components.ApplyOptions{}, r.Actions()[2].Options)
	assert.Equal(t, []string{"ConfigMap a/x", "Namespace a"}, names(r.Live()), "live objects sorted by kind, namespace, name")

	log := r.Actions()
	log[0].Verb = "changed"
	assert.Equal(t, "apply", r.Actions()[0].Verb, "Actions returns a copy")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, r.Apply(cancelled, []components.Object{obj("A", "", "b")}, opts), context.Canceled)
	assert.ErrorIs(t, r.Delete(cancelled, nil), context.Canceled)
	_, err := r.Ready(cancelled, release.HealthCheck{Name: "x"}, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, r.Actions(), 5, "a cancelled call records nothing")
}

func TestRecorderReady(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		script func(*components.Recorder)
		want   []bool
	}{
		{"ready at once by default", func(*components.Recorder) {}, []bool{true, true}},
		{"ReadyAfter 0", func(r *components.Recorder) { r.ReadyAfter("c", 0) }, []bool{true}},
		{"ReadyAfter 2", func(r *components.Recorder) { r.ReadyAfter("c", 2) }, []bool{false, false, true, true}},
		{"never", func(r *components.Recorder) { r.ReadyAfter("c", -1) }, []bool{false, false, false}},
		{"other checks unaffected", func(r *components.Recorder) { r.ReadyAfter("other", -1) }, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := components.NewRecorder()
			tt.script(r)
			var got []bool
			for range tt.want {
				ok, err := r.Ready(ctx, release.HealthCheck{Name: "c"}, nil)
				require.NoError(t, err)
				got = append(got, ok)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, len(tt.want), r.Polls("c"))
		})
	}
}

func TestActionString(t *testing.T) {
	o := obj("Deployment", "kube-system", "coredns")
	assert.Equal(t, "apply Deployment kube-system/coredns", components.Action{Verb: "apply", Object: o}.String())
	o.Component, o.Version = "coredns", "v1.12.0"
	assert.Equal(t, "coredns v1.12.0: delete Deployment kube-system/coredns", components.Action{Verb: "delete", Object: o}.String())
	assert.Equal(t, "Namespace x", obj("Namespace", "", "x").String())
}
