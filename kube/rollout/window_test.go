package rollout_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hopdag/hopdag/kube/rollout"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCalendarOpen(t *testing.T) {
	// Saturdays 02:00-06:00 in Paris (UTC+1 in December, UTC+2 in July).
	sat := rollout.Window{Schedule: "0 2 * * SAT", Duration: 4 * time.Hour, TimeZone: "Europe/Paris"}
	tests := []struct {
		name    string
		windows []rollout.Window
		t       string
		open    bool
		closes  string // when open
		next    string // NextOpen
	}{
		{"no windows: always open", nil, "2026-12-09T10:00:00Z", true, "", "2026-12-09T10:00:00Z"},
		{"before the window", []rollout.Window{sat}, "2026-12-12T00:59:00Z", false, "", "2026-12-12T01:00:00Z"},
		{"at its opening", []rollout.Window{sat}, "2026-12-12T01:00:00Z", true, "2026-12-12T05:00:00Z", "2026-12-12T01:00:00Z"},
		{"inside", []rollout.Window{sat}, "2026-12-12T04:30:00Z", true, "2026-12-12T05:00:00Z", "2026-12-12T04:30:00Z"},
		{"at its close", []rollout.Window{sat}, "2026-12-12T05:00:00Z", false, "", "2026-12-19T01:00:00Z"},
		{"summer time", []rollout.Window{sat}, "2026-07-11T00:30:00Z", true, "2026-07-11T04:00:00Z", "2026-07-11T00:30:00Z"},
		{"midweek", []rollout.Window{sat}, "2026-12-09T10:00:00Z", false, "", "2026-12-12T01:00:00Z"},
		{"two windows that touch are one stretch", []rollout.Window{
			{Schedule: "0 1 * * *", Duration: time.Hour}, {Schedule: "0 2 * * *", Duration: 2 * time.Hour},
		}, "2026-12-09T01:30:00Z", true, "2026-12-09T04:00:00Z", "2026-12-09T01:30:00Z"},
		{"an activation inside an open one extends it", []rollout.Window{{Schedule: "0 1,2 * * *", Duration: 90 * time.Minute}}, "2026-12-09T01:30:00Z", true, "2026-12-09T03:30:00Z", ""},
		{"a window that never opens", []rollout.Window{{Schedule: "0 0 30 2 *", Duration: time.Hour}}, "2026-12-09T00:00:00Z", false, "", "0001-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := rollout.Compile(tt.windows)
			require.NoError(t, err)
			open, closes := c.Open(at(tt.t))
			assert.Equal(t, tt.open, open)
			if tt.open && tt.closes != "" {
				assert.Equal(t, at(tt.closes), closes.UTC())
			}
			if tt.next != "" {
				assert.Equal(t, at(tt.next), c.NextOpen(at(tt.t)).UTC())
			}
		})
	}
}

func TestCalendarOpenStretchIsBounded(t *testing.T) {
	c, err := rollout.Compile([]rollout.Window{{Schedule: "* * * * *", Duration: time.Minute}})
	require.NoError(t, err)
	now := at("2026-12-09T10:00:00Z")
	open, closes := c.Open(now)
	assert.True(t, open)
	assert.Equal(t, now.Add(31*24*time.Hour), closes, "a window always open is said to close 31 days on")
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		w    rollout.Window
		want string
	}{
		{rollout.Window{Schedule: "0 2 * *", Duration: time.Hour}, `window 0: schedule "0 2 * *": expected exactly 5 fields, found 4: [0 2 * *]; write five fields, minute hour day-of-month month day-of-week, e.g. "0 2 * * SAT"`},
		{rollout.Window{Schedule: "0 2 * * SAT", Duration: time.Second}, "window 0: duration 1s: must be between 1m and 8784h0m0s"},
		{rollout.Window{Schedule: "0 2 * * SAT", Duration: time.Hour, TimeZone: "Mars/Olympus"}, `window 0: time zone "Mars/Olympus": not an IANA time zone name (e.g. Europe/Paris, UTC)`},
	}
	for _, tt := range tests {
		_, err := rollout.Compile([]rollout.Window{tt.w})
		require.Error(t, err)
		assert.Equal(t, tt.want, err.Error())
	}
}

// TestPropertyCalendarMatchesMinuteByMinute compares Open with a brute
// force over a week, minute by minute, for random sets of weekly windows
// ("M H * * D" in UTC), whose activations the brute force finds by
// matching the fields itself.
func TestPropertyCalendarMatchesMinuteByMinute(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	start := at("2026-12-07T00:00:00Z")
	const minutes = 7 * 24 * 60
	for trial := range 50 {
		type weekly struct{ m, h, d, dur int }
		var ws []rollout.Window
		var spec []weekly
		for range 1 + rng.IntN(3) {
			w := weekly{rng.IntN(4) * 15, rng.IntN(24), rng.IntN(7), 1 + rng.IntN(3000)}
			spec = append(spec, w)
			ws = append(ws, rollout.Window{Schedule: fmt.Sprintf("%d %d * * %d", w.m, w.h, w.d), Duration: time.Duration(w.dur) * time.Minute})
		}
		c, err := rollout.Compile(ws)
		require.NoError(t, err)
		// open[i]: a window holds minute i of the week (activations of
		// the week before count too).
		open := make([]bool, minutes)
		for m := -minutes; m < minutes; m++ {
			s := start.Add(time.Duration(m) * time.Minute)
			for _, w := range spec {
				if s.Minute() == w.m && s.Hour() == w.h && int(s.Weekday()) == w.d {
					for k := max(m, 0); k < min(m+w.dur, minutes); k++ {
						open[k] = true
					}
				}
			}
		}
		for i := 0; i < minutes; i += 7 {
			now := start.Add(time.Duration(i) * time.Minute)
			got, closes := c.Open(now)
			require.Equal(t, open[i], got, "trial %d windows %+v at %v", trial, ws, now)
			if got {
				// It stays open until closes, and closes then (within
				// the week the brute force covers).
				end := i
				for end < minutes && open[end] {
					end++
				}
				if end < minutes {
					require.Equal(t, start.Add(time.Duration(end)*time.Minute), closes, "trial %d windows %+v: close of the stretch at %v", trial, ws, now)
				}
			}
		}
	}
}

func ExampleCalendar_Open() {
	c, err := rollout.Compile([]rollout.Window{{Schedule: "0 2 * * SAT", Duration: 4 * time.Hour, TimeZone: "Europe/Paris"}})
	if err != nil {
		panic(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	now := time.Date(2026, 12, 9, 10, 0, 0, 0, paris) // a Wednesday
	open, _ := c.Open(now)
	fmt.Println("open now:", open)
	next := c.NextOpen(now)
	fmt.Println("opens:", next.In(paris).Format("Mon 2 Jan 15:04 MST"))
	_, closes := c.Open(next)
	fmt.Println("closes:", closes.In(paris).Format("Mon 2 Jan 15:04 MST"))
	// Output:
	// open now: false
	// opens: Sat 12 Dec 02:00 CET
	// closes: Sat 12 Dec 06:00 CET
}

// TestPropertyWindowsMatchMinuteByMinute: Windows of two calendars are
// open exactly where both are, minute by minute over a week, and
// NextOpen is the first minute at or after now where both are (for
// random weekly windows, as the calendar's own property test).
func TestPropertyWindowsMatchMinuteByMinute(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	start := at("2026-12-07T00:00:00Z")
	const minutes = 7 * 24 * 60
	calendar := func() (*rollout.Calendar, []rollout.Window) {
		var ws []rollout.Window
		for range 1 + rng.IntN(3) {
			ws = append(ws, rollout.Window{Schedule: fmt.Sprintf("%d %d * * %d", rng.IntN(4)*15, rng.IntN(24), rng.IntN(7)), Duration: time.Duration(1+rng.IntN(3000)) * time.Minute})
		}
		c, err := rollout.Compile(ws)
		require.NoError(t, err)
		return c, ws
	}
	for trial := range 40 {
		a, wa := calendar()
		b, wb := calendar()
		ws := rollout.Windows{a, nil, b}
		both := make([]bool, minutes)
		for i := range minutes {
			now := start.Add(time.Duration(i) * time.Minute)
			oa, _ := a.Open(now)
			ob, _ := b.Open(now)
			both[i] = oa && ob
		}
		require.False(t, ws.Always())
		for i := 0; i < minutes; i += 11 {
			now := start.Add(time.Duration(i) * time.Minute)
			got, closes := ws.Open(now)
			require.Equal(t, both[i], got, "trial %d windows %+v and %+v at %v", trial, wa, wb, now)
			if got {
				end := i
				for end < minutes && both[end] {
					end++
				}
				if end < minutes {
					require.Equal(t, start.Add(time.Duration(end)*time.Minute), closes, "trial %d: close of the stretch at %v", trial, now)
				}
			}
			first := -1
			for k := i; k < minutes; k++ {
				if both[k] {
					first = k
					break
				}
			}
			if first >= 0 {
				require.Equal(t, start.Add(time.Duration(first)*time.Minute), ws.NextOpen(now), "trial %d windows %+v and %+v: next opening from %v", trial, wa, wb, now)
			}
		}
	}
	assert.True(t, rollout.Windows{nil, {}}.Always(), "no windows: always open")
	open, closes := rollout.Windows{}.Open(start)
	assert.True(t, open)
	assert.True(t, closes.IsZero())
}
