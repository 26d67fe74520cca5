package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// TestTargetsMatchClusterVersionUpdates: `hopdag targets` and a
// ClusterVersion's status.availableUpdates and conditionalUpdates
// (kube/controller's Updates) answer one question: for
// every version of the sample catalog, with its risk accepted and not,
// and for states of the two-track catalog, they list the same targets
// with the same hop counts, and the same targets behind risks with the
// same risks.
func TestTargetsMatchClusterVersionUpdates(t *testing.T) {
	load := func(dir string) *release.Catalog {
		c, err := release.Load(os.DirFS(dir))
		require.NoError(t, err, "load %s", dir)
		return c
	}
	type row struct{ version, hops, risks string }
	compare := func(t *testing.T, args []string, avail []v1alpha1.Update, cond []v1alpha1.ConditionalUpdate) {
		t.Helper()
		code, out, stderr := invoke(args...)
		require.Equal(t, 0, code, "hopdag %s: stderr %s", strings.Join(args, " "), stderr)
		var gotAvail, gotCond []row
		risky := false
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			switch {
			case strings.HasPrefix(line, "Behind risks"):
				risky = true
			case len(f) < 3 || !isCount(f[1]) && !isCount(f[2]):
				// a header, a blank line, or "no version is reachable ..."
			case strings.Contains(args[1], "two-track"): // TRACK VERSION HOPS ...
				r := row{version: f[0] + "=" + f[1], hops: f[2]}
				if risky {
					r.risks = strings.Join(f[3:], " ")
					gotCond = append(gotCond, r)
				} else {
					gotAvail = append(gotAvail, r)
				}
			case risky:
				gotCond = append(gotCond, row{version: f[0], hops: f[1], risks: strings.Join(f[2:], " ")})
			default:
				gotAvail = append(gotAvail, row{version: f[0], hops: f[1]})
			}
		}
		var wantAvail, wantCond []row
		for _, u := range avail {
			wantAvail = append(wantAvail, row{version: u.Version, hops: fmt.Sprint(u.Hops)})
		}
		for _, u := range cond {
			var names []string
			for _, r := range u.Risks {
				names = append(names, r.Name)
			}
			wantCond = append(wantCond, row{version: u.Version, hops: fmt.Sprint(u.Hops), risks: strings.Join(names, ", ")})
		}
		byVersion := func(a, b row) int { return strings.Compare(a.version, b.version) }
		for _, rs := range [][]row{gotAvail, gotCond, wantAvail, wantCond} {
			slices.SortFunc(rs, byVersion)
		}
		assert.Equal(t, wantAvail, gotAvail, "hopdag %s: available (-controller +cli)", strings.Join(args, " "))
		assert.Equal(t, wantCond, gotCond, "hopdag %s: behind risks (-controller +cli)", strings.Join(args, " "))
	}

	cat := load(catalog)
	compared := 0
	for _, v := range cat.Versions() {
		for _, accept := range [][]string{nil, {"containerd-v2-config"}} {
			args := []string{"targets", catalog, "--from", v.Original()}
			if accept != nil {
				args = append(args, "--accept", strings.Join(accept, ","))
			}
			t.Run(strings.Join(args[2:], " "), func(t *testing.T) {
				avail, cond, err := controller.Updates(cat, path.State{"": v}, accept)
				require.NoError(t, err)
				compare(t, args, avail, cond)
			})
			compared++
		}
	}

	two := load(twoTrack)
	for _, from := range []string{"platform=13.01.0,kubernetes=v1.32.0", "platform=13.01.2,kubernetes=v1.34.1", "platform=27.03.0,kubernetes=v1.35.0"} {
		t.Run(from, func(t *testing.T) {
			st, err := path.ParseState(from)
			require.NoError(t, err)
			avail, cond, err := controller.Updates(two, st, nil)
			require.NoError(t, err)
			compare(t, []string{"targets", twoTrack, "--from", from}, avail, cond)
		})
		compared++
	}
	require.Greater(t, compared, 10, "cases compared")
}

// isCount reports whether s is a non-negative decimal number.
func isCount(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}
