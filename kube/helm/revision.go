package helm

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	rv1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hopdag/hopdag/release"
)

// VersionLabel is the release label (a label of the Secret Helm keeps a
// revision in) that names the component version a revision installs:
// Run sets it on every install and upgrade, Helm copies it onto a
// rollback's revision, and Rollback looks it up to find the from-version's
// revision. Its value is the version's canonical form (26.6.0-rc.2 for
// v26.06-rc.2), or, for a version that is not a valid label value (longer
// than 63 characters, or ending in "-"), "sha256-" and 40 hex digits of
// the canonical form's SHA-256.
const VersionLabel = "hopdag.io/version"

// versionLabel is v's value of VersionLabel.
func versionLabel(v release.Version) string {
	c := v.Canonical()
	if len(validation.IsValidLabelValue(c)) == 0 {
		return c
	}
	sum := sha256.Sum256([]byte(c))
	return "sha256-" + hex.EncodeToString(sum[:])[:40]
}

// history is the revisions of release name, oldest first; nil, and no
// error, when there is no such release.
func history(cfg *action.Configuration, name string) ([]*rv1.Release, error) {
	hs, err := cfg.Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	out := make([]*rv1.Release, 0, len(hs))
	for _, h := range hs {
		switch r := h.(type) {
		case *rv1.Release:
			out = append(out, r)
		case rv1.Release:
			out = append(out, &r)
		default:
			return nil, fmt.Errorf("release %s: unsupported release type %T", name, h)
		}
	}
	slices.SortFunc(out, func(a, b *rv1.Release) int { return cmp.Compare(a.Version, b.Version) })
	return out, nil
}

// clearPending marks the last revision of hs failed when it is pending
// (pending-install, pending-upgrade, pending-rollback), so that Helm
// takes another operation: a pending revision is what a process killed
// during Helm's wait leaves, and Helm refuses every later upgrade of the
// release ("another operation (install/upgrade/rollback) is in
// progress").
//
// This is safe because hopdag runs a run's components under its state
// lock (package state: one lease holder at a time, and a holder that
// loses its lease has its context cancelled), which excludes a concurrent
// hopdag operation on the same release: a pending revision the runner
// sees was left by an operation that is no longer running. A `helm
// upgrade` run by hand at the same moment is not excluded; don't.
func clearPending(cfg *action.Configuration, hs []*rv1.Release, log *slog.Logger) error {
	if len(hs) == 0 {
		return nil
	}
	last := hs[len(hs)-1]
	if last.Info == nil || !last.Info.Status.IsPending() {
		return nil
	}
	was := last.Info.Status
	log.Warn("helm: marking an interrupted revision failed", "release", last.Namespace+"/"+last.Name,
		"revision", last.Version, "status", was.String())
	last.SetStatus(rcommon.StatusFailed, fmt.Sprintf("hopdag: marked failed: left %s by an interrupted operation", was))
	if err := cfg.Releases.Update(last); err != nil {
		return fmt.Errorf("mark revision %d (%s) failed: %w", last.Version, was, err)
	}
	return nil
}

// deployed reports whether a revision was deployed at some time: it is
// deployed, or superseded by a later one. A failed revision may have been
// applied in part; a pending one was interrupted.
func deployed(r *rv1.Release) bool {
	return r.Info != nil && (r.Info.Status == rcommon.StatusDeployed || r.Info.Status == rcommon.StatusSuperseded)
}

// describe lists the revisions of hs for an error: "1 (app-0.1.0,
// v1.0.0, superseded), 2 (...)".
func describe(hs []*rv1.Release) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteString(", ")
		}
		ch := "no chart"
		if h.Chart != nil && h.Chart.Metadata != nil {
			ch = h.Chart.Metadata.Name + "-" + h.Chart.Metadata.Version
		}
		v := h.Labels[VersionLabel]
		if v == "" {
			v = "unlabelled"
		}
		status := "unknown"
		if h.Info != nil {
			status = h.Info.Status.String()
		}
		fmt.Fprintf(&b, "%d (%s, %s, %s)", h.Version, ch, v, status)
	}
	return b.String()
}
