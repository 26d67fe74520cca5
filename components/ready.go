package components

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hopdag/hopdag/release"
)

// Defaults of a health check that sets no timeout or interval.
const (
	defaultReadyTimeout  = 5 * time.Minute
	defaultReadyInterval = 5 * time.Second
)

// waitReady polls each health check in turn until it reports ready. A check
// that is not ready within its timeout fails with a *NotReadyError (it
// matches context.DeadlineExceeded); when ctx ends first, the error wraps
// ctx.Err(). After each poll that is still pending it calls report (when
// not nil) with a one-line summary of why (see waitingOf).
func waitReady(ctx context.Context, rc ReadyChecker, checks []release.HealthCheck, objs []Object, report func(string)) error {
	for _, hc := range checks {
		if err := pollReady(ctx, rc, hc, objs, report); err != nil {
			return err
		}
	}
	return nil
}

func pollReady(ctx context.Context, rc ReadyChecker, hc release.HealthCheck, objs []Object, report func(string)) error {
	timeout := hc.Timeout.Duration
	if timeout <= 0 {
		timeout = defaultReadyTimeout
	}
	interval := hc.Interval.Duration
	if interval <= 0 {
		interval = defaultReadyInterval
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The first poll is immediate; later ones wait interval after the
	// previous poll returned, so a slow check is never asked twice at once.
	timer := time.NewTimer(0)
	defer timer.Stop()
	polls := 0
	var reason error
	for {
		select {
		case <-pctx.Done():
			if err := ctx.Err(); err != nil {
				return annotate(err, "health check %s", hc.Name)
			}
			return &NotReadyError{Check: hc.Name, Timeout: timeout, Polls: polls, Reason: reason}
		case <-timer.C:
		}
		polls++
		ok, err := rc.Ready(pctx, hc, objs)
		switch {
		case ok && err == nil:
			return nil
		case errors.Is(err, ErrPending):
			reason = err
		case err != nil && pctx.Err() == nil:
			return annotate(err, "health check %s", hc.Name)
		}
		if report != nil && pctx.Err() == nil {
			report(waitingOf(hc.Name, err))
		}
		timer.Reset(interval)
	}
}

// waitingOf is the one-line summary of a pending poll of health check
// name: the error's Waiting() when it has one (apply.UnreadyError: "waiting
// for DaemonSet kube-system/calico-node: 3 of 5 updated"), else its first
// line, else the check's name.
func waitingOf(name string, err error) string {
	var w interface{ Waiting() string }
	if errors.As(err, &w) {
		if s := w.Waiting(); s != "" {
			return s
		}
	}
	if err == nil {
		return "waiting for health check " + name
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return "waiting for health check " + name + ": " + msg
}
