package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// Validator is the validating admission webhook of ClusterVersion
// (kube/config/webhook holds its configuration, generated from the marker
// in doc.go), with
// StarlingX's rules:
//
//   - desiredVersion must be a release of the catalog, reachable from the
//     version the system runs with the accepted risks; otherwise the
//     message lists what is reachable;
//   - while an upgrade is in progress (phase Upgrading), or paused,
//     waiting for approval or failed after a component moved,
//     desiredVersion may change only back to the version the upgrade
//     started from (the abort), which is allowed even when a hop has
//     completed and going back is a downgrade from currentVersion;
//   - a ClusterVersion cannot be deleted while its upgrade is in
//     progress, paused or waiting for approval, failed after a component
//     moved, or left a hop partway (status.plan.partial): its status is
//     the only record of where the components are (CheckDelete). Abandon
//     the upgrade first, or annotate the ClusterVersion
//     hopdag.io/allow-delete=<reason> (AllowDelete), which the reconciler
//     records;
//   - every update that changes desiredVersion, with spec.abandon too,
//     and every update that clears spec.abandon, checks that the target
//     is reachable (but the abort).
//
// The catalog is built again only when one of its objects changed
// (catalog.Cache): on a catalog of thousands of objects the strict load
// takes seconds, and the API server waits for the webhook at most 30 s
// (timeoutSeconds in kube/config/webhook).
type Validator struct {
	reader   client.Reader
	catalogs *catalog.Cache
}

// NewValidator returns a validator that reads the catalog through r, and
// the files its ComponentVersions name from manifests (catalog.WithManifests).
func NewValidator(r client.Reader, manifests fs.FS) *Validator {
	return &Validator{reader: r, catalogs: catalog.NewCache(catalog.WithManifests(manifests))}
}

// SetupWebhookWithManager serves the validator from the manager's webhook
// server at /validate-hopdag-io-v1alpha1-clusterversion.
func (v *Validator) SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.ClusterVersion{}).WithValidator(v).Complete()
}

var gk = v1alpha1.GroupVersion.WithKind("ClusterVersion").GroupKind()

// ValidateCreate checks that the desired version can be reached from the
// installed one.
func (v *Validator) ValidateCreate(ctx context.Context, cv *v1alpha1.ClusterVersion) (admission.Warnings, error) {
	from := cmpOr(cv.Spec.InstalledVersion, cv.Spec.DesiredVersion)
	return nil, v.reachable(ctx, cv, string(from))
}

// ValidateUpdate refuses a change of desiredVersion mid-hop (but the
// abort) and an unreachable desiredVersion: on every update that changes
// it (an abandon set with it too), and on the one that clears
// spec.abandon, which starts the upgrade to it.
func (v *Validator) ValidateUpdate(ctx context.Context, old, cv *v1alpha1.ClusterVersion) (admission.Warnings, error) {
	changed := !samePosition(string(old.Spec.DesiredVersion), string(cv.Spec.DesiredVersion))
	cleared := old.Spec.Abandon != nil && cv.Spec.Abandon == nil
	if !changed && !cleared {
		return nil, nil
	}
	if changed {
		if err := CheckUpdate(old, cv); err != nil {
			return nil, err
		}
		if ps := old.Status.Plan; ps != nil && (old.Status.Phase == v1alpha1.PhaseUpgrading || stopped(old.Status.Phase)) && setsBack(ps.From, string(cv.Spec.DesiredVersion)) {
			// The abort: once a hop has completed, going back to where
			// the upgrade started is a downgrade from
			// status.currentVersion, which the reconciler then explains
			// instead of running.
			return nil, nil
		}
	}
	from := cmpOr(v1alpha1.Target(old.Status.CurrentVersion), old.Spec.InstalledVersion, old.Spec.DesiredVersion)
	if fv, err := parsePosition(string(from)); !changed && err == nil {
		if to, err := parsePosition(string(cv.Spec.DesiredVersion)); err == nil && fv.satisfies(to) {
			return nil, nil // clearing spec.abandon starts nothing
		}
	}
	return nil, v.reachable(ctx, cv, string(from))
}

// stopped reports whether phase is an upgrade that has started and not
// ended, stopped between components: its abort is allowed.
func stopped(phase v1alpha1.Phase) bool {
	switch phase {
	case v1alpha1.PhasePaused, v1alpha1.PhaseWaitingForApproval, v1alpha1.PhaseFailed:
		return true
	}
	return false
}

// ValidateDelete refuses to delete a ClusterVersion mid-upgrade.
func (v *Validator) ValidateDelete(_ context.Context, cv *v1alpha1.ClusterVersion) (admission.Warnings, error) {
	return nil, CheckDelete(cv)
}

// CheckUpdate is the rule for desiredVersion changes during an upgrade:
// while an upgrade has started and not ended (Upgrading, or Paused or
// WaitingForApproval or Failed with components done) only the abort back
// to the from-version
// is allowed, or an abandon: the components of a half-done hop have
// moved, and a plan from the last completed hop would not know where they
// are. An upgrade paused before its first component may change target.
func CheckUpdate(old, cv *v1alpha1.ClusterVersion) error {
	ps := old.Status.Plan
	if ps == nil || samePosition(string(old.Spec.DesiredVersion), string(cv.Spec.DesiredVersion)) || cv.Spec.Abandon != nil {
		return nil
	}
	where, next, ok := started(old)
	if !ok || setsBack(ps.From, string(cv.Spec.DesiredVersion)) {
		return nil // not started, or the abort
	}
	msg := fmt.Sprintf("%s: desiredVersion may only be set back to %s, which aborts the upgrade at the next safe point; %s and then set a new target", where, ps.From, next)
	if old.Status.Phase == v1alpha1.PhaseUpgrading {
		msg += " (pausing does not allow one: the hop's components have moved)"
	}
	return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Forbidden(field.NewPath("spec", "desiredVersion"), msg)})
}

// started reports whether cv's upgrade has started and not ended:
// Upgrading, or Paused, WaitingForApproval or Failed once a component is
// done. where says so, next what the user may do; CheckUpdate and
// CheckDelete refuse with them.
func started(cv *v1alpha1.ClusterVersion) (where, next string, ok bool) {
	ps := cv.Status.Plan
	if ps == nil {
		return "", "", false
	}
	state := ""
	switch cv.Status.Phase {
	case v1alpha1.PhaseUpgrading:
		state, next = "is in progress", "wait for the upgrade to end, or abandon it (spec.abandon)"
		if cv.Spec.Rollback != nil {
			state, next = "is being rolled back (spec.rollback)", "wait for the rollback to end, or abandon it (spec.abandon)"
		}
	case v1alpha1.PhasePaused:
		state, next = "is paused", "resume it (spec.paused: false), or abandon it (spec.abandon)"
	case v1alpha1.PhaseWaitingForApproval:
		state, next = "waits for approval", "approve it (spec.approvals, see status.plan.waiting), or abandon it (spec.abandon)"
	case v1alpha1.PhaseFailed:
		state, next = "failed", "fix the failure and increment spec.retry to retry it, roll it back (spec.rollback), or abandon it (spec.abandon)"
	}
	if state == "" || ps.Progress.Done == 0 && cv.Status.Phase != v1alpha1.PhaseUpgrading {
		return "", "", false
	}
	return fmt.Sprintf("hop %s of the upgrade %s -> %s %s (%s done)", ps.Hop, ps.From, ps.To, state, ps.Progress.Summary), next, true
}

// midUpgrade reports whether cv's status is the only record of where the
// components of its upgrade are: the upgrade started (started), or, in
// any phase but Abandoned, a hop was left partway (status.plan.partial).
func midUpgrade(cv *v1alpha1.ClusterVersion) (where, next string, ok bool) {
	if where, next, ok := started(cv); ok {
		return where, next, ok
	}
	if ps := cv.Status.Plan; ps != nil && ps.Partial != nil && cv.Status.Phase != v1alpha1.PhaseAbandoned {
		return between(cv.Status.CurrentVersion, ps.Partial), finishHop(ps.Partial), true
	}
	return "", "", false
}

// AllowDelete is the annotation that lets a ClusterVersion be deleted
// mid-upgrade (see CheckDelete); its value says why. The reconciler
// records the deletion and the reason in a DeletedMidUpgrade Warning
// Event.
const AllowDelete = "hopdag.io/allow-delete"

// CheckDelete refuses deleting a ClusterVersion mid-upgrade, as
// CheckUpdate refuses it a new target (and whatever the phase while an
// upgrade runs, is paused or waits for approval): its status is the only
// record of where the components of its upgrade are, and a ClusterVersion
// created again under its name would start from spec.installedVersion.
// An upgrade abandoned (spec.abandon: the status records it) may be
// deleted, and so may any ClusterVersion annotated AllowDelete with a
// reason.
func CheckDelete(cv *v1alpha1.ClusterVersion) error {
	if cv.Annotations[AllowDelete] != "" {
		return nil
	}
	where, next, ok := midUpgrade(cv)
	if !ok {
		switch cv.Status.Phase {
		case v1alpha1.PhaseUpgrading, v1alpha1.PhasePaused, v1alpha1.PhaseWaitingForApproval:
			where = fmt.Sprintf("the upgrade to %s %s", cv.Status.DesiredVersion, map[v1alpha1.Phase]string{
				v1alpha1.PhaseUpgrading: "is in progress", v1alpha1.PhasePaused: "is paused", v1alpha1.PhaseWaitingForApproval: "waits for approval"}[cv.Status.Phase])
			next = "set desiredVersion back to " + planFrom(cv) + " to abort it, or abandon it (spec.abandon)"
		default:
			return nil
		}
	}
	return apierrors.NewForbidden(v1alpha1.GroupVersion.WithResource("clusterversions").GroupResource(), cv.Name,
		fmt.Errorf("%s: deleting ClusterVersion %s/%s would lose that record, and one created again would plan from spec.installedVersion; %s and then delete it, or annotate it %s=<reason> to delete it all the same",
			where, cv.Namespace, cv.Name, next, AllowDelete))
}

func planFrom(cv *v1alpha1.ClusterVersion) string {
	if cv.Status.Plan != nil {
		return cv.Status.Plan.From
	}
	return cv.Status.CurrentVersion
}

// reachable refuses a desiredVersion the catalog cannot reach from from.
func (v *Validator) reachable(ctx context.Context, cv *v1alpha1.ClusterVersion, from string) error {
	cat, err := v.catalogs.Load(ctx, v.reader, cv.Namespace)
	if err != nil {
		if errors.Is(err, release.ErrInvalidCatalog) {
			return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "desiredVersion"), cv.Spec.DesiredVersion, "the catalog of namespace "+cv.Namespace+" is invalid: "+err.Error())})
		}
		return apierrors.NewInternalError(err)
	}
	return CheckReachable(cat, cv, from)
}

// CheckReachable refuses a desiredVersion that is not a release of cat or
// cannot be reached from from; the message lists what is reachable.
func CheckReachable(cat *release.Catalog, cv *v1alpha1.ClusterVersion, from string) error {
	fv, err := parsePosition(from)
	if err != nil {
		return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "installedVersion"), from, err.Error())})
	}
	to, err := parsePosition(string(cv.Spec.DesiredVersion))
	if err != nil {
		return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "desiredVersion"), cv.Spec.DesiredVersion, err.Error())})
	}
	_, err = resolve(cat, &cv.Spec, fv, to)
	if err == nil {
		return nil
	}
	var ut *path.UnknownTrackError
	if errors.As(err, &ut) {
		// Say which field names the track, and nothing about routes: a
		// version is on spec.track.
		if _, version := to.state[""]; version && ut.Track == cv.Spec.Track && ut.Track != "" {
			return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "track"), cv.Spec.Track,
				fmt.Sprintf("track %s has no releases (%s)", cv.Spec.Track, strings.TrimPrefix(err.Error(), "path: ")))})
		}
		f, value := field.NewPath("spec", "desiredVersion"), string(cv.Spec.DesiredVersion)
		if _, ok := to.state[ut.Track]; !ok {
			f, value = field.NewPath("spec", "installedVersion"), from
		}
		return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(f, value, strings.TrimPrefix(err.Error(), "path: "))})
	}
	var uv *path.UnknownVersionError
	if errors.As(err, &uv) && uv.Role == "current" {
		// The version the system runs is the unknown one: name it and
		// its field, not the desired version.
		detail := strings.TrimPrefix(err.Error(), "path: ")
		if len(uv.Nearest) == 0 && len(uv.OnTracks) == 0 && cv.Spec.Track != "" {
			return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "track"), cv.Spec.Track,
				fmt.Sprintf("track %s has no releases (%s)", cv.Spec.Track, detail))})
		}
		f := field.NewPath("spec", "installedVersion")
		if cv.Spec.InstalledVersion == "" {
			f = field.NewPath("spec", "desiredVersion") // installedVersion defaults to it
		}
		return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(f, from,
			fmt.Sprintf("%s, the version the system runs, is not a release of the catalog (%s)", fv, detail))})
	}
	av, cu, _ := updatesFor(cat, &cv.Spec, fv)
	var reach []string
	for _, u := range av {
		reach = append(reach, u.Version)
	}
	var risky []string
	for _, u := range cu {
		var names []string
		for _, r := range u.Risks {
			names = append(names, r.Name)
		}
		risky = append(risky, u.Version+" (accept "+strings.Join(names, ", ")+")")
	}
	msg := fmt.Sprintf("%s cannot be reached from %s", to, fv)
	if errors.Is(err, path.ErrUnknownVersion) {
		msg = fmt.Sprintf("%s is not a release of the catalog", to)
	}
	if len(reach) == 0 {
		msg += "; nothing is reachable from " + fv.String()
	} else {
		msg += "; reachable from " + fv.String() + ": " + strings.Join(reach, ", ")
	}
	if len(risky) > 0 {
		msg += "; behind risks: " + strings.Join(risky, ", ")
	}
	return apierrors.NewInvalid(gk, cv.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "desiredVersion"), cv.Spec.DesiredVersion, msg+" ("+err.Error()+")")})
}
