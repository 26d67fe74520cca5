package release_test

import (
	"testing"

	"github.com/hopdag/hopdag/release"
)

// TestCheckTrackName: the error of CheckTrackName is the message and fix
// Load gives a Release of that track.
func TestCheckTrackName(t *testing.T) {
	const rules = `a track name takes only letters, digits, ".", "_" and "-" (it is written in step names, TRACK=VERSION and HOP/COMPONENT/PHASE, and in states, track=version,track=version)`
	tests := []struct {
		track string
		want  string // "" for a valid name
	}{
		{"", ""},
		{"platform", ""},
		{"k8s-1.34_x", ""},
		{"plat/form", `track "plat/form" holds "/"; ` + rules + "; rename the track, e.g. plat-form, here and wherever it is named"},
		{"edge site", `track "edge site" holds " "; ` + rules + "; rename the track, e.g. edge-site, here and wherever it is named"},
		{"a=1,b", `track "a=1,b" holds "="; ` + rules + "; rename the track, e.g. a-1-b, here and wherever it is named"},
		{"é", `track "é" holds "é"; ` + rules + "; rename the track, e.g. -, here and wherever it is named"},
	}
	for _, tt := range tests {
		err := release.CheckTrackName(tt.track)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("CheckTrackName(%q) = %q, want %q", tt.track, got, tt.want)
		}
	}
}
