package apply_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeSnippet checks that docs/operator.md's controller-runtime wiring is
// the operator function of example_test.go, which the compiler checks.
func TestReadmeSnippet(t *testing.T) {
	readme, err := os.ReadFile("../../docs/operator.md")
	require.NoError(t, err)
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	between := func(s, start, end string) string {
		i := strings.Index(s, start)
		j := strings.Index(s, end)
		require.True(t, i >= 0 && j > i, "want the text between %q and %q", start, end)
		return s[i+len(start) : j]
	}
	code := between(string(src), "// snippet:start\n", "\n// snippet:end")
	doc := between(string(readme), "<!-- kube-apply:start -->\n```go\n", "```\n<!-- kube-apply:end -->")
	assert.Equal(t, code, doc, "docs/operator.md's applier snippet and operator() in kube/apply/example_test.go differ: copy the function into docs/operator.md")
}
