package hopdag_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

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

// markdownLink is a Markdown link's target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of the README and docs/ names a file of the
// repository, and every #anchor a heading of the file it names (as
// GitHub spells a heading's anchor), so that moving a section breaks a
// test, not a reader's link.
func TestDocLinksResolve(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	n := 0
	for _, name := range append([]string{"README.md", "CHANGELOG.md"}, docs...) {
		text, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := name
			if file != "" {
				path = filepath.Join(filepath.Dir(name), file)
			}
			n++
			if !assert.FileExists(t, path, "%s links to %s", name, target) || anchor == "" {
				continue
			}
			body, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Contains(t, anchors(string(body)), anchor, "%s links to %s: %s has no heading of that anchor", name, target, path)
		}
	}
	assert.Greater(t, n, 10, "the README and docs link to each other")
}

// anchors are the anchors GitHub gives the headings of a Markdown text:
// lower case, spaces to hyphens, punctuation dropped; a heading met again
// gets -1, -2, ...
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		a := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return r
			}
			return -1
		}, h)
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}

func TestAnchors(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"# The command line\n", "the-command-line"},
		{"## Kubernetes: the applier\n", "kubernetes-the-applier"},
		{"### `hopdag run`, resumed\n", "hopdag-run-resumed"},
		{"```\n# not a heading\n```\n## Scale\n", "scale"},
		{"## Tests\n## Tests\n## Tests\n", "tests-2"},
	}
	for _, tt := range tests {
		got := anchors(tt.heading)
		assert.Equal(t, tt.want, got[len(got)-1], tt.heading)
	}
}
