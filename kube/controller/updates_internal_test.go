package controller

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
)

// TestListUpdates: the status lists at most maxUpdatesListed targets of
// each kind, the newest and those of fewest hops (of equal hops the
// newer), by version, and counts the others; a conditional update lists
// at most maxRisksListed risks, their messages cut.
func TestListUpdates(t *testing.T) {
	updates := func(hops ...int) []v1alpha1.Update {
		var out []v1alpha1.Update
		for i, h := range hops {
			out = append(out, v1alpha1.Update{Version: fmt.Sprintf("v%d", i), Hops: h})
		}
		return out
	}
	versions := func(us []v1alpha1.Update) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.Version)
		}
		return out
	}
	seq := func(from, to int) []string { // v<from>..v<to>
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("v%d", i))
		}
		return out
	}
	chain := make([]int, 150)
	for i := range chain {
		chain[i] = i + 1
	}
	flat := make([]int, 150) // every target one hop away
	for i := range flat {
		flat[i] = 1
	}
	for _, tc := range []struct {
		name string
		hops []int
		want []string
		more int
	}{
		{name: "none", hops: nil, want: nil},
		{name: "all fit", hops: chain[:100], want: seq(0, 99)},
		{name: "chain: the nearest and the newest", hops: chain, want: append(seq(0, 98), "v149"), more: 50},
		{name: "equal hops: the newest", hops: flat, want: seq(50, 149), more: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := listUpdates(updates(tc.hops...), nil)
			assert.Equal(t, tc.want, versions(l.available), "listUpdates(%d targets) available", len(tc.hops))
			assert.Equal(t, tc.more, l.moreAvailable, "moreAvailable")
		})
	}

	var cu []v1alpha1.ConditionalUpdate
	for i, u := range updates(chain...) {
		cu = append(cu, v1alpha1.ConditionalUpdate{Update: u, Risks: make([]v1alpha1.ConditionalRisk, i%15)})
		for j := range cu[i].Risks {
			cu[i].Risks[j] = v1alpha1.ConditionalRisk{Name: fmt.Sprint("r", j), Message: strings.Repeat("é", 400)}
		}
	}
	l := listUpdates(nil, cu)
	assert.Len(t, l.conditional, maxUpdatesListed)
	assert.Equal(t, 50, l.moreConditional)
	for _, u := range l.conditional {
		i, err := strconv.Atoi(strings.TrimPrefix(u.Version, "v"))
		require.NoError(t, err)
		n := i % 15 // the risks of entry i
		assert.Len(t, u.Risks, min(n, maxRisksListed), "risks of %s", u.Version)
		assert.Equal(t, max(n-maxRisksListed, 0), u.RisksOmitted, "risksOmitted of %s", u.Version)
		for _, r := range u.Risks {
			assert.LessOrEqual(t, len(r.Message), riskMessageBytes, "risk message of %s", u.Version)
			assert.True(t, strings.HasSuffix(r.Message, "é..."), "cut at a rune boundary: %q", r.Message[len(r.Message)-8:])
		}
	}
	assert.Len(t, cu[14].Risks, 14, "the caller's list is not changed")
}
