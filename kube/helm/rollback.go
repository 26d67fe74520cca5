package helm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	rv1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/hopdag/hopdag/runner"
)

// Rollback puts t.To's release back at t.From's version: it rolls back to
// the newest deployed revision labelled t.From's version (VersionLabel),
// does nothing when the release's last revision is that version and
// deployed (the upgrade failed before Helm wrote a revision, or the
// rollback already ran), and uninstalls the release when the hop
// installed it (t.From is nil or no helm component). Running it again
// after it returned nil changes nothing. For a release that moved
// (ErrReleaseMoved: Run refuses it), see rollbackMoved.
func (r *Runner) Rollback(ctx context.Context, t runner.Task) error {
	cv := t.To
	if _, err := chartRef(cv); err != nil {
		return runner.Permanent(err)
	}
	cfg, err := r.config(cv)
	if err != nil {
		return err
	}
	name, ns := releaseName(cv), namespace(cv)
	log := r.taskLogger(t)
	if moved(t.From, cv) != nil {
		return r.rollbackMoved(cfg, t)
	}
	if t.From == nil || t.From.Helm == nil {
		un := action.NewUninstall(cfg)
		un.Timeout, un.WaitStrategy = timeoutOf(cv), kube.StatusWatcherStrategy
		if _, err := un.Run(name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return fmt.Errorf("helm: %s: uninstall release %s/%s: %w", cv.Key(), ns, name, err)
		}
		return nil
	}
	hs, err := history(cfg, name)
	if err != nil {
		return fmt.Errorf("helm: %s: history of release %s/%s: %w", cv.Key(), ns, name, err)
	}
	if len(hs) == 0 {
		return runner.Permanent(fmt.Errorf("helm: %s: roll back release %s/%s to %s: no such release", cv.Key(), ns, name, t.From.Version))
	}
	if err := clearPending(cfg, hs, log); err != nil {
		return fmt.Errorf("helm: %s: release %s/%s: %w", cv.Key(), ns, name, err)
	}
	target, inferred, err := rollbackTarget(hs, t)
	if err != nil {
		return runner.Permanent(fmt.Errorf("helm: %s: roll back release %s/%s to %s: %w", cv.Key(), ns, name, t.From.Version, err))
	}
	if target == nil {
		log.Info("helm: release already at the from-version", "release", ns+"/"+name,
			"revision", hs[len(hs)-1].Version, "version", t.From.Version.Original())
		return nil
	}
	// Helm's rollback takes no context: do not start one once ctx is done.
	if err := ctx.Err(); err != nil {
		return err
	}
	if inferred {
		// Label it, so that the rollback's revision (Helm copies the
		// labels) and later rollbacks find it by its version.
		log.Info("helm: labelling a revision made before labels with the from-version", "release", ns+"/"+name,
			"revision", target.Version, "version", t.From.Version.Original())
		target.Labels = maps.Clone(target.Labels)
		if target.Labels == nil {
			target.Labels = map[string]string{}
		}
		target.Labels[VersionLabel] = versionLabel(t.From.Version)
		if err := cfg.Releases.Update(target); err != nil {
			return fmt.Errorf("helm: %s: release %s/%s: label revision %d: %w", cv.Key(), ns, name, target.Version, err)
		}
	}
	rb := action.NewRollback(cfg)
	rb.Version, rb.Timeout, rb.WaitStrategy = target.Version, timeoutOf(cv), kube.StatusWatcherStrategy
	if d := fmt.Sprintf("hopdag: roll back %s to %s (revision %d)", cv.Key(), t.From.Version, target.Version); utf8.RuneCountInString(d) <= action.MaxDescriptionLength {
		rb.Description = d // else Helm's own, "Rollback to N"
	}
	if err := rb.Run(name); err != nil {
		return fmt.Errorf("helm: %s: roll back release %s/%s to revision %d (%s): %w", cv.Key(), ns, name, target.Version, t.From.Version, err)
	}
	return nil
}

// rollbackTarget is the revision of hs (oldest first, not empty) that
// puts the release back at t.From's version, or nil when the last
// revision is that version, deployed.
//
// A revision is t.From's when it carries t.From's VersionLabel. For a
// release with revisions from before labels (made by a hopdag that did
// not label them), when no revision is labelled t.From's version and the
// labelled revisions all follow the unlabelled ones: t.From is a version
// the release was at before labelling began (each hop starts where the
// one before ended), and the newest deployed unlabelled revision is where
// labelling began, so it is t.From's (inferred); its chart version must
// be the one t.From pins, if any. With no labelled revision at all, the
// hop wrote none, and a deployed last revision is where it started.
// Anything else is an error that lists the revisions.
func rollbackTarget(hs []*rv1.Release, t runner.Task) (target *rv1.Release, inferred bool, err error) {
	want := versionLabel(t.From.Version)
	last := hs[len(hs)-1]
	lastDeployed := last.Info != nil && last.Info.Status == rcommon.StatusDeployed
	if lastDeployed && last.Labels[VersionLabel] == want {
		return nil, false, nil
	}
	for i := len(hs) - 1; i >= 0; i-- {
		if h := hs[i]; h.Labels[VersionLabel] == want && deployed(h) {
			return h, false, nil
		}
	}
	// The fallback for revisions made before labels: k is the first
	// labelled one.
	k := slices.IndexFunc(hs, func(h *rv1.Release) bool { return h.Labels[VersionLabel] != "" })
	if k < 0 {
		if lastDeployed {
			return nil, false, nil
		}
		k = 0 // nothing to infer from
	}
	suffix := !slices.ContainsFunc(hs[k:], func(h *rv1.Release) bool { return h.Labels[VersionLabel] == "" })
	for i := k - 1; suffix && i >= 0; i-- {
		h := hs[i]
		if !deployed(h) {
			continue
		}
		if pin := t.From.Helm.Version; pin != "" && (h.Chart == nil || h.Chart.Metadata == nil || h.Chart.Metadata.Version != pin) {
			break
		}
		return h, true, nil
	}
	return nil, false, fmt.Errorf("no deployed revision is labelled %s=%s, nor is one certain to be that version (revisions: %s); roll back by hand: helm rollback %s REVISION -n %s",
		VersionLabel, want, describe(hs), last.Name, last.Namespace)
}
