package hopdag_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's usage snippet is examples/embedded/main.go, verbatim.
func TestReadmeSnippetIsTheEmbeddedExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("examples/embedded/main.go")
	require.NoError(t, err)
	const start, end = "<!-- embedded:start -->\n```go\n", "```\n<!-- embedded:end -->"
	i := strings.Index(string(readme), start)
	j := strings.Index(string(readme), end)
	require.True(t, i >= 0 && j > i, "README.md must hold the snippet between %q and %q", start, end)
	assert.Equal(t, string(src), string(readme)[i+len(start):j], "README snippet and examples/embedded/main.go differ: copy the file into the README")
}
