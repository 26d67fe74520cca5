package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	hstate "github.com/hopdag/hopdag/state"
)

func demo(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"--speed", "20000"}, args...), &out, &errOut)
	return code, out.String() + errOut.String()
}

// readStatus loads the status saved in the File store in dir.
func readStatus(t *testing.T, dir string) *record.Status {
	t.Helper()
	f, err := hstate.OpenFile(dir)
	require.NoError(t, err)
	defer f.Close()
	s, err := f.Load(t.Context())
	require.NoError(t, err)
	require.NotNil(t, s, "no status saved in %s", dir)
	return s
}

func TestDemoSucceeds(t *testing.T) {
	for _, mode := range []string{"eager", "batch"} {
		t.Run(mode, func(t *testing.T) {
			code, out := demo(t, "--mode", mode)
			assert.Equal(t, 0, code, out)
			assert.Contains(t, out, "plan v26.06-rc.2 -> v26.09: 3 hops")
			assert.Contains(t, out, "status v26.06-rc.2 -> v26.09: Succeeded, 19/19 components done")
		})
	}
}

// A --fail run followed by a resume with --state completes without
// re-running what succeeded.
func TestDemoFailThenResume(t *testing.T) {
	state := t.TempDir()
	code, out := demo(t, "--fail", "etcd", "--state", state)
	require.Equal(t, 1, code, out)
	first := readStatus(t, state)
	assert.Equal(t, record.Failed, first.Phase)
	etcd, ok := first.Component(2, "etcd")
	require.True(t, ok)
	assert.Equal(t, record.Failed, etcd.Phase)
	master, _ := first.Component(2, "kubernetes-master")
	assert.Equal(t, record.Skipped, master.Phase)
	assert.Equal(t, "dependency etcd failed", master.Reason)

	code, out = demo(t, "--state", state)
	require.Equal(t, 0, code, out)
	second := readStatus(t, state)
	assert.Equal(t, record.Succeeded, second.Phase)
	assert.Equal(t, 2, second.Runs)
	for h, hop := range first.Hops {
		for _, c := range hop.Components {
			after, _ := second.Component(h, c.Name)
			assert.Equal(t, record.Succeeded, after.Phase, "%s on hop %d", c.Name, h+1)
			if c.Phase == record.Succeeded {
				assert.Equal(t, c.Attempts, after.Attempts, "%s succeeded in the first run and must not run again", c.Name)
				assert.Equal(t, c.StartedAt, after.StartedAt, "%s was restarted", c.Name)
			}
		}
	}
}

func TestDemoBadInput(t *testing.T) {
	code, out := demo(t, "--mode", "sideways")
	assert.Equal(t, 2, code, out)
	code, out = demo(t, "--to", "v99.0")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "v99.0")
}
