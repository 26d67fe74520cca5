package helm

import (
	"context"
	"errors"
	"fmt"
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
// after it returned nil changes nothing.
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
	target, err := rollbackTarget(hs, t)
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
// release whose revisions from before the hop carry no label (made by a
// hopdag that did not label them): when every labelled revision is one of
// this hop's (labelled t.To's version) and they all follow the unlabelled
// ones, the newest deployed unlabelled revision is the one the hop
// started from; its chart version must be the one t.From pins, if any.
// Anything else is an error that lists the revisions.
func rollbackTarget(hs []*rv1.Release, t runner.Task) (*rv1.Release, error) {
	want, to := versionLabel(t.From.Version), versionLabel(t.To.Version)
	last := hs[len(hs)-1]
	if last.Info != nil && last.Info.Status == rcommon.StatusDeployed && last.Labels[VersionLabel] == want {
		return nil, nil
	}
	for i := len(hs) - 1; i >= 0; i-- {
		if h := hs[i]; h.Labels[VersionLabel] == want && deployed(h) {
			return h, nil
		}
	}
	// The fallback for revisions made before labels.
	k := len(hs)
	for k > 0 && hs[k-1].Labels[VersionLabel] == to {
		k--
	}
	unlabelled := true
	for _, h := range hs[:k] {
		if h.Labels[VersionLabel] != "" {
			unlabelled = false
		}
	}
	if unlabelled {
		if k == len(hs) && last.Info != nil && last.Info.Status == rcommon.StatusDeployed {
			return nil, nil // the hop wrote no revision: the release is as it was
		}
		for i := k - 1; i >= 0 && k < len(hs); i-- {
			h := hs[i]
			if !deployed(h) {
				continue
			}
			if pin := t.From.Helm.Version; pin != "" && (h.Chart == nil || h.Chart.Metadata == nil || h.Chart.Metadata.Version != pin) {
				break
			}
			return h, nil
		}
	}
	return nil, fmt.Errorf("no deployed revision is labelled %s=%s (revisions: %s); roll back by hand: helm rollback %s REVISION -n %s",
		VersionLabel, want, describe(hs), last.Name, last.Namespace)
}
