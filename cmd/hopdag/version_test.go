package main

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "hopdag (devel)"},
		{"checkout without VCS stamp", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hopdag/hopdag/cmd/hopdag", Version: "(devel)"}},
			"hopdag (devel) go1.26.8"},
		{"go install from a proxy", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hopdag/hopdag/cmd/hopdag", Version: "v0.1.0"}},
			"hopdag v0.1.0 go1.26.8"},
		{"checkout with VCS stamp", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20261206230000-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-12-06T23:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"hopdag v0.1.1-0.20261206230000-0123456789ab+dirty (revision 0123456789abcdef, 2026-12-06T23:00:00Z, modified) go1.26.8"},
		{"clean tree", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			"hopdag v0.2.0 (revision abc)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, versionOf(tc.bi).text(), "versionOf(%+v).text()", tc.bi)
		})
	}
}

func TestVersionCommand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stdout   string // prefix
		stderrIn string
	}{
		{"version", []string{"version"}, exitOK, "hopdag (devel)", ""},
		{"--version", []string{"--version"}, exitOK, "hopdag (devel)", ""},
		{"json", []string{"version", "-o", "json"}, exitOK, "{\n  \"apiVersion\": \"hopdag.io/v1alpha1\",\n  \"kind\": \"Version\",\n  \"version\": \"(devel)\"", ""},
		{"yaml", []string{"version", "-o", "yaml"}, exitOK, "apiVersion: hopdag.io/v1alpha1\nkind: Version\nversion: (devel)\n", ""},
		{"bad format", []string{"version", "-o", "xml"}, exitUsage, "", "hopdag version: -o xml: want text, json or yaml\nRun 'hopdag version --help' for usage.\n"},
		{"argument", []string{"version", "extra"}, exitUsage, "", `version takes no arguments, got "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, &stdout, &stderr)
			require.Equal(t, tc.code, code, "hopdag %s: exit code; stderr:\n%s", strings.Join(tc.args, " "), stderr.String())
			assert.True(t, strings.HasPrefix(stdout.String(), tc.stdout), "hopdag %s printed %q, want a prefix %q", strings.Join(tc.args, " "), stdout.String(), tc.stdout)
			assert.Contains(t, stderr.String(), tc.stderrIn)
		})
	}
}

// The JSON form decodes into the fields it documents.
func TestVersionJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(t.Context(), []string{"version", "-o", "json"}, &stdout, &stderr), stderr.String())
	var got map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	assert.Equal(t, "(devel)", got["version"])
	assert.Contains(t, got["go"], "go1.", "go: the toolchain")
}
