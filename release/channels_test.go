package release

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func fstestMap(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

func TestChannels(t *testing.T) {
	src := `apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: a}
spec: {version: v1.0, components: []}
---
apiVersion: hopdag.io/v1alpha1
kind: Release
metadata: {name: b}
spec: {version: v1.1-rc.1, components: []}
---
apiVersion: hopdag.io/v1alpha1
kind: UpgradePath
metadata: {name: p}
spec:
  rules: [{from: v1.0, to: v1.1-rc.1}]
  versions:
    - {version: v1.0, channels: [stable, fast]}
    - {version: v1.1-rc.1, channels: [candidate]}
`
	c, err := Load(fstestMap(map[string]string{"catalog.yaml": src}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Channels(""), []string{"candidate", "fast", "stable"}; !slices.Equal(got, want) {
		t.Errorf("Channels() = %v, want %v", got, want)
	}
	vi, ok := c.VersionInfo("", MustParseVersion("v1.0"))
	if !ok || !vi.InChannel("stable") || vi.InChannel("candidate") {
		t.Errorf("VersionInfo(v1.0) = %+v, want in stable, not in candidate", vi)
	}

	bad := strings.Replace(src, "channels: [candidate]", `channels: [candidate, "", candidate]`, 1)
	_, err = Load(fstestMap(map[string]string{"catalog.yaml": bad}))
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) != 2 {
		t.Fatalf("Load(bad channels) = %v, want a LoadError with 2 problems", err)
	}
	msg := err.Error()
	for _, want := range []string{"channel has no name", "channel candidate is listed twice for v1.1-rc.1", "catalog.yaml:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Load(bad channels) = %q, want it to mention %q", msg, want)
		}
	}
}
