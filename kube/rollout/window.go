package rollout

import (
	"errors"
	"fmt"
	"time"
	_ "time/tzdata" // time zones in images without a zone database

	"github.com/robfig/cron/v3"
)

// Window is a maintenance window: it opens at each time Schedule names,
// in TimeZone, and stays open for Duration.
type Window struct {
	// Schedule is a cron expression of five fields (minute, hour, day of
	// month, month, day of week), e.g. "0 2 * * SAT", or a descriptor
	// such as "@daily".
	Schedule string
	// Duration is how long the window stays open; at least a minute.
	Duration time.Duration
	// TimeZone is an IANA time zone, e.g. "Europe/Paris"; "" is UTC.
	TimeZone string
}

// Calendar answers when a set of windows is open. The zero Calendar
// (no windows) is always open.
type Calendar struct {
	windows []compiled
}

type compiled struct {
	sched cron.Schedule
	d     time.Duration
}

// parser reads the cron syntax of Kubernetes CronJobs.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxDuration bounds a window: longer than a year is not a window.
const maxDuration = 366 * 24 * time.Hour

// maxStretch bounds how far Open follows windows that carry one another
// on.
const maxStretch = 31 * 24 * time.Hour

// Compile checks the windows and returns their Calendar; an error names
// the window (from 0) and what is wrong with it.
func Compile(ws []Window) (*Calendar, error) {
	c := &Calendar{}
	var errs []error
	for i, w := range ws {
		loc, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			errs = append(errs, fmt.Errorf("window %d: time zone %q: not an IANA time zone name (e.g. Europe/Paris, UTC)", i, w.TimeZone))
			continue
		}
		s, err := parser.Parse(w.Schedule)
		if err != nil {
			errs = append(errs, fmt.Errorf("window %d: schedule %q: %v; write five fields, minute hour day-of-month month day-of-week, e.g. \"0 2 * * SAT\"", i, w.Schedule, err))
			continue
		}
		if w.Duration < time.Minute || w.Duration > maxDuration {
			errs = append(errs, fmt.Errorf("window %d: duration %v: must be between 1m and %v", i, w.Duration, maxDuration))
			continue
		}
		c.windows = append(c.windows, compiled{sched: inZone{s, loc}, d: w.Duration})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// inZone is a schedule read in a time zone.
type inZone struct {
	s   cron.Schedule
	loc *time.Location
}

func (z inZone) Next(t time.Time) time.Time { return z.s.Next(t.In(z.loc)) }

// Always reports whether the calendar has no windows: it is always open.
func (c *Calendar) Always() bool { return c == nil || len(c.windows) == 0 }

// Open reports whether a window is open at t and, if so, when the open
// stretch that holds t closes (windows that overlap or touch count as
// one stretch; one that goes on past 31 days from t is said to close
// then); a calendar with no windows is always open, with a zero close
// time.
func (c *Calendar) Open(t time.Time) (bool, time.Time) {
	if c.Always() {
		return true, time.Time{}
	}
	var closes time.Time
	for _, w := range c.windows {
		if end, ok := w.openUntil(t); ok && end.After(closes) {
			closes = end
		}
	}
	if closes.IsZero() {
		return false, time.Time{}
	}
	// Another window may open before this stretch closes and carry it
	// on: each window's activations after t are examined once, in order,
	// up to horizon.
	cursor := make([]time.Time, len(c.windows))
	for i := range cursor {
		cursor[i] = t
	}
	horizon := t.Add(maxStretch)
	for changed := true; changed && closes.Before(horizon); {
		changed = false
		for i, w := range c.windows {
			for s := w.sched.Next(cursor[i]); !s.IsZero() && !s.After(closes) && s.Before(horizon); s = w.sched.Next(s) {
				cursor[i] = s
				if e := s.Add(w.d); e.After(closes) {
					closes, changed = e, true
				}
			}
		}
	}
	if closes.After(horizon) {
		closes = horizon
	}
	return true, closes
}

// openUntil reports whether w is open at t and until when (the latest
// end of an activation that holds t).
func (w compiled) openUntil(t time.Time) (time.Time, bool) {
	// The activations that hold t started in (t-d, t]: the first after
	// t-d is one of them if it is not after t.
	s := w.sched.Next(t.Add(-w.d))
	if s.IsZero() || s.After(t) {
		return time.Time{}, false
	}
	end := s.Add(w.d)
	for n := w.sched.Next(s); !n.IsZero() && !n.After(t); n = w.sched.Next(n) {
		end = n.Add(w.d)
	}
	return end, true
}

// NextOpen returns t if a window is open at t, else when the next one
// opens (zero if none ever does, e.g. "0 0 30 2 *").
func (c *Calendar) NextOpen(t time.Time) time.Time {
	if open, _ := c.Open(t); open {
		return t
	}
	var next time.Time
	for _, w := range c.windows {
		if s := w.sched.Next(t); !s.IsZero() && (next.IsZero() || s.Before(next)) {
			next = s
		}
	}
	return next
}

// Windows are calendars that must all be open at once: a cluster's own
// maintenance windows and those of the rollout that started it. Nil
// entries, and calendars without windows, are always open.
type Windows []*Calendar

// Always reports whether every calendar is always open.
func (ws Windows) Always() bool {
	for _, c := range ws {
		if !c.Always() {
			return false
		}
	}
	return true
}

// Open reports whether every calendar is open at t and, if so, when the
// first of their open stretches closes (zero when all are always open).
func (ws Windows) Open(t time.Time) (bool, time.Time) {
	var closes time.Time
	for _, c := range ws {
		open, end := c.Open(t)
		if !open {
			return false, time.Time{}
		}
		if !end.IsZero() && (closes.IsZero() || end.Before(closes)) {
			closes = end
		}
	}
	return true, closes
}

// NextOpen returns t if every calendar is open at t, else the first time
// after t when they all are (zero if that is not found within 1,000
// openings of one of them, or one never opens again).
func (ws Windows) NextOpen(t time.Time) time.Time {
	for range 1000 {
		moved := false
		for _, c := range ws {
			n := c.NextOpen(t)
			if n.IsZero() {
				return time.Time{}
			}
			if n.After(t) {
				t, moved = n, true
			}
		}
		if !moved {
			return t
		}
	}
	return time.Time{}
}
