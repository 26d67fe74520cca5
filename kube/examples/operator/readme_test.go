package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/operator.md's "Use it in an operator" snippet is wire.go, verbatim, so the
// snippet is what this package compiles.
func TestReadmeSnippetIsWire(t *testing.T) {
	readme, err := os.ReadFile("../../../docs/operator.md")
	require.NoError(t, err)
	src, err := os.ReadFile("wire.go")
	require.NoError(t, err)
	const start, end = "<!-- operator:start -->\n```go\n", "```\n<!-- operator:end -->"
	i := strings.Index(string(readme), start)
	j := strings.Index(string(readme), end)
	require.True(t, i >= 0 && j > i, "docs/operator.md must hold the snippet between %q and %q", start, end)
	assert.Equal(t, string(src), string(readme)[i+len(start):j], "docs/operator.md's snippet and kube/examples/operator/wire.go differ: copy the file into docs/operator.md")
}
