package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/record"
	"github.com/hopdag/hopdag/state"
)

// TestEmbedded runs the program as the README shows it and checks what it
// prints: the plan, one line per component upgraded, and the outcome; and
// that a second run resumes from the status the first saved, which has
// nothing left to run.
func TestEmbedded(t *testing.T) {
	t.Chdir(t.TempDir()) // the program's upgrade-state
	out := capture(t)
	assert.True(t, strings.HasPrefix(out, "plan v26.06-rc.2 -> v26.06: 2 hops"), "the plan comes first:\n%s", out)
	assert.Contains(t, out, "hop v26.06-rc.2 -> v26.06-rc.3: kubernetes-master -> v1.33.3\n")
	assert.Contains(t, out, "hop v26.06-rc.3 -> v26.06: provider -> v1.4.0\n")
	assert.True(t, strings.HasSuffix(out, "\nSucceeded <nil>\n"), "the run succeeds:\n%s", out)

	store, err := state.OpenFile("upgrade-state")
	require.NoError(t, err)
	saved, err := store.Load(t.Context())
	require.NoError(t, store.Close())
	require.NoError(t, err)
	require.NotNil(t, saved, "the status saved in upgrade-state")
	assert.Equal(t, record.Succeeded, saved.Phase)

	again := capture(t)
	assert.NotContains(t, again, "\nhop v", "the second run upgrades nothing:\n%s", again)
	assert.True(t, strings.HasSuffix(again, "\nSucceeded <nil>\n"), "the second run succeeds:\n%s", again)
}

// capture runs main and returns what it printed on stdout.
func capture(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	main()
	os.Stdout = stdout
	w.Close()
	return <-done
}
