package release_test

import (
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/release"
)

// TestLoadMessagesDoNotGrowWithTheValue: a 4 MiB invalid constraint gave
// a 12 MiB error, the value quoted three times. A message quotes at most
// 200 bytes of a value and says how long it was.
func TestLoadMessagesDoNotGrowWithTheValue(t *testing.T) {
	long := func(prefix string, n int) string { return prefix + strings.Repeat("a", n-len(prefix)) }
	rule := func(from string) string {
		return header + "kind: UpgradePath\nmetadata: {name: p}\nspec:\n  rules:\n  - {from: \"" + from + "\", to: v2.0.0}\n"
	}
	cv := func(spec string) string {
		return header + "kind: ComponentVersion\nmetadata: {name: a}\nspec:\n  name: a\n  version: v1.0.0\n  handler: a\n" + spec
	}
	tests := []struct {
		name, yaml string
		size       int    // of the long value
		want       string // what the message says of it
	}{
		{"a constraint of one comparison", rule(long(">= v1.0.0x", 4<<20)), 4 << 20, `invalid constraint ">= v1.0.0x`},
		{"a constraint's second comparison", rule(">= v1.0.0, < " + long("v2.0.0x", 1<<20)), 1<<20 + 13, `comparison "< v2.0.0x`},
		{"a constraint's operator", rule(strings.Repeat("<>", 1<<19) + " v1.0.0"), 1 << 20, `unknown operator "<><>`},
		{"a version", header + "kind: Release\nmetadata: {name: r}\nspec:\n  version: " + long("v1.0.0.", 1<<20) + "\n  components: []\n", 1 << 20, `invalid version "v1.0.0.aaa`},
		{"a duration", cv("  timeout: " + long("5x", 1<<20) + "\n"), 1 << 20, `invalid duration "5xaaa`},
		{"a scalar for a mapping", cv("  retries: " + long("often", 1<<20) + "\n"), 1 << 20, `want a mapping, got "oftenaaa`},
		{"a number for a string", cv("  params: {x: 0." + strings.Repeat("1", 1<<20-2) + "}\n"), 1 << 20, `quote it: x: "0.111`},
		{"an unknown field's key", cv("  ? " + long("x", 1<<20) + "\n  : 1\n"), 1 << 20, `spec.xaaa`},
		{"the key of a number for a string", cv("  params:\n    ? " + long("k", 1<<20) + "\n    : 3\n"), 1 << 20, `quote it: kaaa`},
		{"an apiVersion", "apiVersion: " + long("v", 1<<20) + "\nkind: Release\nmetadata: {name: r}\nspec: {}\n", 1 << 20, `unknown apiVersion "vaaa`},
		{"a kind", header + "kind: " + long("K", 1<<20) + "\nmetadata: {name: r}\nspec: {}\n", 1 << 20, `unknown kind "Kaaa`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := release.Load(fstest.MapFS{"c.yaml": {Data: []byte(tt.yaml)}, "r.yaml": {Data: []byte(releasesV1V2)}})
			require.Error(t, err)
			msg := err.Error()
			assert.Less(t, len(msg), 4<<10, "length of the error of a %d-byte value, want under 4 KiB; it begins %.600s", tt.size, msg)
			assert.Contains(t, msg[:min(len(msg), 4<<10)], tt.want, "the error quotes the value's start")
			assert.Contains(t, msg[:min(len(msg), 4<<10)], "... ("+strconv.Itoa(tt.size)+" bytes)", "the error says how long the value is")
		})
	}
}
