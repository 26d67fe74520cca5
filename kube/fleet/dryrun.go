package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/catalog"
	"github.com/hopdag/hopdag/kube/controller"
	"github.com/hopdag/hopdag/kube/internal/eventlimit"
	"github.com/hopdag/hopdag/kube/rollout"
	"github.com/hopdag/hopdag/path"
	"github.com/hopdag/hopdag/release"
)

// maxBlocked is how many blocked ClusterVersions a dry run names; it
// counts the others.
const maxBlocked = 100

// dryRun computes the fleet's plan: each selected ClusterVersion's
// route to ur's target, from the version it runs, resolved as its
// reconciler would with the rollout's acceptRisks and channel set on it;
// grouped by route, with the ClusterVersions that cannot go named with
// the resolver's diagnostics.
func (r *Reconciler) dryRun(ctx context.Context, ur *v1alpha1.UpgradeRollout, cvs []v1alpha1.ClusterVersion, d rollout.Decision, now time.Time) (*v1alpha1.DryRun, error) {
	dr := &v1alpha1.DryRun{ObservedGeneration: ur.Generation, Time: metav1.NewTime(now)}
	waveOf := map[string]string{}
	for _, m := range d.Members {
		waveOf[m.Key] = d.Waves[m.Wave].Name
	}
	// Each ClusterVersion's route in the catalog of its namespace, as its
	// reconciler resolves it.
	type loaded struct {
		cat *release.Catalog
		err error
	}
	catalogs := map[string]loaded{}
	routes := map[string]*v1alpha1.PlannedRoute{}
	for i := range cvs {
		cv := &cvs[i]
		l, ok := catalogs[cv.Namespace]
		if !ok {
			l.cat, l.err = catalog.Load(ctx, r.reader, cv.Namespace, catalog.WithManifests(r.manifests))
			if l.err != nil && !errors.Is(l.err, release.ErrInvalidCatalog) {
				return nil, fmt.Errorf("fleet: UpgradeRollout %s/%s: loading the catalog of namespace %s for its dry run: %w", ur.Namespace, ur.Name, cv.Namespace, l.err)
			}
			catalogs[cv.Namespace] = l
		}
		var p ClusterRoute
		if l.err != nil {
			p = ClusterRoute{Current: currentOf(cv), Reason: "CatalogInvalid", Message: l.err.Error()}
		} else {
			p = RouteOf(l.cat, ur, cv)
		}
		key := MemberKey(ur, cv)
		switch {
		case p.Reason != "":
			dr.BlockedCount++
			if len(dr.Blocked) < maxBlocked {
				dr.Blocked = append(dr.Blocked, v1alpha1.BlockedCluster{Name: key, Wave: waveOf[key], Current: p.Current, Reason: p.Reason, Risks: p.Risks, Message: eventlimit.Cut(p.Message, 1024)})
			}
		case len(p.Hops) == 0:
			dr.AtTarget++
		default:
			k := p.Current + "\x00" + strings.Join(p.Hops, "\x00")
			if routes[k] == nil {
				routes[k] = &v1alpha1.PlannedRoute{From: p.Current, Hops: p.Hops}
			}
			routes[k].Clusters = append(routes[k].Clusters, key+" ("+waveOf[key]+")")
		}
	}
	for _, rt := range routes {
		slices.Sort(rt.Clusters)
		dr.Routes = append(dr.Routes, *rt)
	}
	slices.SortFunc(dr.Routes, func(a, b v1alpha1.PlannedRoute) int {
		return cmp.Or(cmp.Compare(a.From, b.From), slices.Compare(a.Hops, b.Hops))
	})
	slices.SortFunc(dr.Blocked, func(a, b v1alpha1.BlockedCluster) int { return cmp.Compare(a.Name, b.Name) })
	return dr, nil
}

// ClusterRoute is one ClusterVersion's part of a rollout's dry run:
// the version it runs and its route to the rollout's target, or why it
// cannot go.
type ClusterRoute struct {
	// Current is the version the ClusterVersion runs (its status's, else
	// its spec's).
	Current string
	// Hops are the route's hops, by their target versions; none when it
	// runs the target already.
	Hops []string
	// Reason is empty when the ClusterVersion can go, else why not:
	// BehindRisks (Risks name the risks to accept), UnknownVersion or
	// NoRoute; Message is the resolver's diagnostic.
	Reason  string
	Risks   []string
	Message string
}

// RouteOf is cv's route to ur's target in cat, resolved as cv's
// reconciler resolves it once the rollout has set its desiredVersion,
// acceptRisks and channel: the dry run's part for cv. It reads nothing
// but its arguments; the UpgradeRollout controller's dry run and hopdag
// rollout plan both call it.
func RouteOf(cat *release.Catalog, ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) ClusterRoute {
	p := ClusterRoute{Current: currentOf(cv)}
	spec := targetSpec(ur, cv)
	route, err := controller.Route(cat, &spec, p.Current)
	var nr *path.NoRouteError
	switch {
	case errors.As(err, &nr) && len(nr.Risks) > 0 && nr.Relaxed != nil && len(nr.Overrides) == 0:
		p.Reason, p.Risks = "BehindRisks", nr.Risks
		p.Message = fmt.Sprintf("%v; add %s to the rollout's spec.acceptRisks to take it", err, strings.Join(nr.Risks, ", "))
	case errors.Is(err, path.ErrUnknownVersion):
		p.Reason, p.Message = "UnknownVersion", err.Error()
	case err != nil:
		p.Reason, p.Message = "NoRoute", err.Error()
	default:
		p.Hops = controller.HopNames(route)
	}
	return p
}

// Decide is the rollout's decision over the ClusterVersions it selects,
// cvs, at now, as the controller takes it: its waves (canaries first),
// each ClusterVersion's state, what starts next. The error says which
// field of ur's spec is invalid.
func Decide(ur *v1alpha1.UpgradeRollout, cvs []v1alpha1.ClusterVersion, now time.Time) (rollout.Decision, error) {
	spec, err := specOf(ur)
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("UpgradeRollout %s/%s: %w", ur.Namespace, ur.Name, err)
	}
	members := make([]rollout.Member, len(cvs))
	for i := range cvs {
		members[i] = memberOf(ur, &cvs[i])
	}
	return rollout.Decide(spec, members, now), nil
}

// currentOf is the version cv runs: its status's, else its spec's.
func currentOf(cv *v1alpha1.ClusterVersion) string {
	return cmp.Or(cv.Status.CurrentVersion, string(cmp.Or(cv.Spec.InstalledVersion, cv.Spec.DesiredVersion)))
}

// targetSpec is cv's spec as the rollout sets it when cv starts.
func targetSpec(ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) v1alpha1.ClusterVersionSpec {
	spec := *cv.Spec.DeepCopy()
	spec.DesiredVersion = ur.Spec.DesiredVersion
	// The rollout upgrades it: a rollback asked before (by another
	// rollout, or by hand) ends, as a new target would end it.
	spec.Rollback = nil
	if ur.Spec.AcceptRisks != nil {
		spec.AcceptRisks = slices.Clone(ur.Spec.AcceptRisks)
	}
	if ur.Spec.Channel != "" {
		spec.Channel = ur.Spec.Channel
	}
	if ur.Spec.OnFailure != "" {
		spec.OnFailure = ur.Spec.OnFailure
	}
	return spec
}

// dryRunNote is the DryRunComputed Event's note.
func dryRunNote(dr *v1alpha1.DryRun, clusters, waves int) string {
	going := 0
	for _, rt := range dr.Routes {
		going += len(rt.Clusters)
	}
	note := fmt.Sprintf("dry run: %d clusters in %d waves: %d to upgrade along %d routes, %d at the target, %d blocked", clusters, waves, going, len(dr.Routes), dr.AtTarget, dr.BlockedCount)
	if dr.BlockedCount > 0 {
		var names []string
		for _, b := range dr.Blocked {
			names = append(names, b.Name+" ("+b.Reason+")")
		}
		note += ": " + joinMax(names, 10)
	}
	return note
}
