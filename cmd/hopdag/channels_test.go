package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// channelsCatalog has three two-hop routes from v1.0 to v1.3: through
// v1.1 (stable, fast), v1.2 (fast) and v1.3-rc.1 (candidate); see its
// releases.yaml.
const channelsCatalog = "testdata/channels-cli/catalog"

// hopLine is a hop's heading in plan's text: "hop 1/2 v1.0 -> v1.2: ...".
var hopLine = regexp.MustCompile(`(?m)^hop \d+/\d+ (\S+) -> (\S+):`)

// planRoute is the versions of the route in plan's text output, from the
// current one on.
func planRoute(t *testing.T, out string) []string {
	t.Helper()
	hops := hopLine.FindAllStringSubmatch(out, -1)
	require.NotEmpty(t, hops, "plan output has no hop:\n%s", out)
	route := []string{hops[0][1]}
	for _, h := range hops {
		require.Equal(t, route[len(route)-1], h[1], "hops follow each other:\n%s", out)
		route = append(route, h[2])
	}
	return route
}

// targetVersions is the VERSION column of targets' table.
func targetVersions(out string) []string {
	var vs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		vs = append(vs, strings.Fields(line)[0])
	}
	return vs
}

// docs/catalog.md's routing rules on the command line: with --channel a route
// enters only versions of that channel; without one, the highest route
// between two GA versions enters no prerelease unless --prereleases is
// given; a channel that lists the prerelease lets the route enter it.
func TestChannelAndPrereleases(t *testing.T) {
	plan := []string{"plan", channelsCatalog, "--from", "v1.0", "--to", "v1.3"}
	targets := []string{"targets", channelsCatalog, "--from", "v1.0"}
	for _, tt := range []struct {
		golden string // under testdata/; "" for no golden file
		args   []string
		route  []string // plan's route; targets: the versions listed
	}{
		{"channels-cli/plan-channels.golden", plan, []string{"v1.0", "v1.2", "v1.3"}},
		{"channels-cli/plan-channels-stable.golden", slices.Concat(plan, []string{"--channel", "stable"}), []string{"v1.0", "v1.1", "v1.3"}},
		{"channels-cli/plan-channels-prereleases.golden", slices.Concat(plan, []string{"--prereleases"}), []string{"v1.0", "v1.3-rc.1", "v1.3"}},
		{"channels-cli/plan-channels-stable-prereleases.golden", slices.Concat(plan, []string{"--channel", "stable", "--prereleases"}), []string{"v1.0", "v1.1", "v1.3"}},
		{"", slices.Concat(plan, []string{"--channel", "fast"}), []string{"v1.0", "v1.2", "v1.3"}},
		{"", slices.Concat(plan, []string{"--channel", "candidate"}), []string{"v1.0", "v1.3-rc.1", "v1.3"}},
		{"channels-cli/targets-channels-stable.golden", slices.Concat(targets, []string{"--channel", "stable"}), []string{"v1.1", "v1.3"}},
		{"channels-cli/targets-channels-stable-routes.golden", slices.Concat(targets, []string{"--channel", "stable", "--routes"}), []string{"v1.1", "v1.3"}},
		{"channels-cli/targets-channels-routes.golden", slices.Concat(targets, []string{"--routes"}), []string{"v1.1", "v1.2", "v1.3-rc.1", "v1.3"}},
	} {
		name := strings.Join(slices.Concat(tt.args[:1], tt.args[2:]), " ") // without the catalog
		t.Run(name, func(t *testing.T) {
			code, out, stderr := invoke(tt.args...)
			require.Equal(t, exitOK, code, "hopdag %s exit code; stderr:\n%s", strings.Join(tt.args, " "), stderr)
			if tt.golden != "" {
				golden(t, tt.golden, out)
			}
			if tt.args[0] == "plan" {
				assert.Equal(t, tt.route, planRoute(t, out), "hopdag %s: route", name)
			} else {
				assert.Equal(t, tt.route, targetVersions(out), "hopdag %s: targets", name)
			}
		})
	}

	// The rules themselves, apart from the tables above.
	route := func(extra ...string) []string {
		t.Helper()
		code, out, stderr := invoke(slices.Concat(plan, extra)...)
		require.Equal(t, exitOK, code, "plan %v: %s", extra, stderr)
		return planRoute(t, out)
	}
	def, stable, pre := route(), route("--channel", "stable"), route("--prereleases")
	assert.NotEqual(t, def, stable, "--channel stable changes the route")
	stableVersions := map[string]bool{"v1.1": true, "v1.3": true}
	for _, v := range stable[1:] {
		assert.True(t, stableVersions[v], "the stable route %v enters %s, which is not in channel stable", stable, v)
	}
	for _, v := range def {
		assert.NotContains(t, v, "-rc", "the route %v between two GA versions enters a prerelease without --prereleases", def)
	}
	assert.Contains(t, pre, "v1.3-rc.1", "with --prereleases the highest route goes through the rc")
	assert.Equal(t, len(def), len(pre), "the rc route is no longer: only --prereleases decides between them")

	// run follows the channel's route too.
	code, _, stderr := invoke("run", channelsCatalog, "--from", "v1.0", "--to", "v1.3", "--channel", "stable", "--simulate", "--speed", "100000")
	require.Equal(t, exitOK, code, "run --channel stable: %s", stderr)
	assert.Equal(t, []string{"v1.0", "v1.1", "v1.3"}, planRoute(t, stderr), "run --channel stable's plan (on stderr: what the run does)")

	// Outside the channel there is no route, and the error says why.
	code, _, stderr = invoke("plan", channelsCatalog, "--from", "v1.0", "--to", "v1.3-rc.1", "--channel", "stable")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "v1.3-rc.1 is not in channel stable (its channels: candidate)")
	code, _, stderr = invoke(slices.Concat(plan, []string{"--channel", "beta"})...)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, `channel "beta": no version is in it; the channels: candidate, fast, stable`)
}
