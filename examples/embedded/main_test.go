package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmbedded runs the program as the README shows it and checks what it
// prints: the plan, one line per component upgraded, and the outcome.
func TestEmbedded(t *testing.T) {
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
	out := <-done

	assert.True(t, strings.HasPrefix(out, "plan v26.06-rc.2 -> v26.06: 2 hops"), "the plan comes first:\n%s", out)
	assert.Contains(t, out, "hop v26.06-rc.2 -> v26.06-rc.3: kubernetes-master -> v1.33.3\n")
	assert.Contains(t, out, "hop v26.06-rc.3 -> v26.06: provider -> v1.4.0\n")
	assert.True(t, strings.HasSuffix(out, "\nSucceeded <nil>\n"), "the run succeeds:\n%s", out)
}
