package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// --simulate simulates every type the command line runs: exec and helm
// components too, --fail makes them fail, and they roll back.
func TestSimulateEveryType(t *testing.T) {
	for _, tt := range []struct {
		name    string
		catalog func(t *testing.T) string
		from    string
		extra   []string
		code    int
		out     string
	}{
		{"exec", func(*testing.T) string { return execCatalog }, "v1.0", nil, 0, "status v1.0 -> v2.0: Succeeded"},
		{"exec fails", func(*testing.T) string { return execCatalog }, "v1.0", []string{"--fail", "db"}, 1, "scripted failure (--fail)"},
		{"exec rolls back", func(*testing.T) string { return execCatalog }, "v1.0", []string{"--fail", "db", "--on-failure", "rollback"}, 1, "RolledBack"},
		{"helm", helmCatalog, "v0.0", nil, 0, "status v0.0 -> v2.0: Succeeded"},
		{"helm fails", helmCatalog, "v0.0", []string{"--fail", "greeter"}, 1, "simulate: scripted failure (--fail)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", tt.catalog(t), "--from", tt.from, "--to", "v2.0", "--simulate", "--speed", "20000"}, tt.extra...)
			code, out, stderr := invoke(args...)
			assert.Equal(t, tt.code, code, "hopdag %v exit code; stdout:\n%s\nstderr:\n%s", args, out, stderr)
			assert.Contains(t, out, tt.out)
			assert.NotContains(t, stderr, "no runner registered")
			assert.NotContains(t, out+stderr, "greeter 1.0: greeter", "the component is named once")
		})
	}
}
