package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/path"
)

const twoTrack = "../../testdata/two-track"

// Golden plans of the five StarlingX change types on testdata/two-track.
func TestGoldenTwoTrack(t *testing.T) {
	from := "platform=13.01.0,kubernetes=v1.33.0"
	tests := []struct {
		name string
		args []string
	}{
		{"plan-two-track-patch.golden", []string{"plan", twoTrack, "--from", from, "--to", "platform=13.01.2"}},
		{"plan-two-track-kubernetes.golden", []string{"plan", twoTrack, "--from", "platform=13.01.2,kubernetes=v1.33.0", "--to", "kubernetes=v1.34.1"}},
		{"plan-two-track-patch-kubernetes.golden", []string{"plan", twoTrack, "--from", from, "--to", "platform=13.01.2,kubernetes=v1.34.1"}},
		{"plan-two-track-major-ga.golden", []string{"plan", twoTrack, "--from", from, "--to", "platform=27.03.0,kubernetes=v1.35.0"}},
		{"plan-two-track-major-patch.golden", []string{"plan", twoTrack, "--from", from, "--to", "platform=27.03.1,kubernetes=v1.35.0"}},
		{"targets-two-track.golden", []string{"targets", twoTrack, "--from", from}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := invoke(tt.args...)
			assert.Equal(t, 0, code, "hopdag %s: stderr:\n%s", strings.Join(tt.args, " "), stderr)
			golden(t, tt.name, out)
		})
	}
}

func TestRouteErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		// in is in stderr (stdout when code is 0); notIn is in neither.
		in, notIn string
	}{
		{"unknown track lists the tracks", []string{"plan", twoTrack, "--from", "platform=13.01.0,kube=v1.33.0", "--to", "platform=13.01.2"}, 1,
			`unknown track "kube": the catalog's tracks: kubernetes, platform`, ""},
		{"a bare version on a two-track catalog is its track's, and names the track it leaves out", []string{"plan", twoTrack, "--from", "13.01.0", "--to", "13.01.2"}, 1,
			"the current state leaves out track kubernetes, tied to track platform (release 13.01.0 on track platform supports kubernetes >= v1.32.0, < v1.34.0): give its version in the state: --from platform=13.01.0,kubernetes=VERSION", ""},
		{"bad state", []string{"plan", twoTrack, "--from", "platform=13.01.0,v1.33", "--to", "platform=13.01.2"}, 1,
			`--from: path: invalid state`, ""},
		{"compatibility", []string{"plan", twoTrack, "--from", "platform=13.01.0,kubernetes=v1.33.0", "--to", "platform=13.01.0,kubernetes=v1.35.0"}, 1,
			"the target state is not allowed: platform 13.01.0 supports kubernetes >= v1.32.0, < v1.34.0, not v1.35.0", ""},
		// Regression: messages named Go options (AcceptRisks) where a CLI
		// user needs the flag; every command's errors go through message.
		{"plan names the flag", []string{"plan", catalog, "--from", "v26.06", "--to", "v26.09-rc.1"}, 1,
			"pass --accept containerd-v2-config to get a route", "AcceptRisks"},
		{"run names the flag", []string{"run", catalog, "--from", "v26.06", "--to", "v26.09-rc.1", "--simulate"}, 1,
			"pass --accept containerd-v2-config to get a route", "AcceptRisks"},
		// Nothing reachable from the newest version is an answer (exit 0,
		// issue 18), and says why without a Go option.
		{"targets from the newest", []string{"targets", catalog, "--from", "v26.09"}, 0,
			"no version is reachable from v26.09: no usable rule leads out of v26.09", "AcceptRisks"},
		{"unknown channel", []string{"plan", catalog, "--from", "v26.03", "--to", "v26.06", "--channel", "stable"}, 1,
			`channel "stable": no version is in it; the channels: none`, "WithChannel"},
		{"--prereleases is accepted", []string{"plan", catalog, "--from", "v26.03", "--to", "v26.09", "--prereleases"}, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := invoke(tt.args...)
			assert.Equal(t, tt.code, code, "hopdag %s exit code; stderr:\n%s", strings.Join(tt.args, " "), stderr)
			if tt.code == 0 {
				assert.Contains(t, stdout, tt.in)
			} else {
				assert.Contains(t, stderr, tt.in)
			}
			if tt.notIn != "" {
				assert.NotContains(t, stdout+stderr, tt.notIn)
			}
		})
	}
}

func TestRunTwoTrackSimulated(t *testing.T) {
	code, out, stderr := invoke("run", twoTrack, "--from", "platform=13.01.0,kubernetes=v1.33.0", "--to", "platform=27.03.0,kubernetes=v1.35.0", "--simulate", "--speed", "100000")
	assert.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", stderr, out)
	assert.Contains(t, stderr, "hop 4/4 kubernetes v1.34.1 -> v1.35.0", "the plan a run executes is on stderr")
	assert.Contains(t, out, "Succeeded")
}

func TestFlagText(t *testing.T) {
	rs := []path.Relaxation{{Kind: path.AcceptRisk, Name: "r1"}, {Kind: path.AcceptRisk, Name: "r2"}}
	assert.Equal(t, "pass --accept r1,r2 to get a route", flagText(rs, true))
	assert.Equal(t, "pass --accept r1,r2 to open the closed edges out of the reachable versions", flagText(rs, false))
}
