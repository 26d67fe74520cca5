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
	cat, err := catalog.Load(ctx, r.reader, ur.Namespace, catalog.WithManifests(r.manifests))
	if err != nil && !errors.Is(err, release.ErrInvalidCatalog) {
		return nil, fmt.Errorf("fleet: UpgradeRollout %s/%s: loading the catalog for its dry run: %w", ur.Namespace, ur.Name, err)
	}
	routes := map[string]*v1alpha1.PlannedRoute{}
	for i := range cvs {
		cv := &cvs[i]
		current := cmp.Or(cv.Status.CurrentVersion, string(cmp.Or(cv.Spec.InstalledVersion, cv.Spec.DesiredVersion)))
		block := func(reason, msg string, risks []string) {
			dr.BlockedCount++
			if len(dr.Blocked) < maxBlocked {
				dr.Blocked = append(dr.Blocked, v1alpha1.BlockedCluster{Name: cv.Name, Wave: waveOf[cv.Name], Current: current, Reason: reason, Risks: risks, Message: truncate(msg, 1024)})
			}
		}
		if err != nil {
			block("CatalogInvalid", err.Error(), nil)
			continue
		}
		spec := targetSpec(ur, cv)
		route, rerr := controller.Route(cat, &spec, current)
		var nr *path.NoRouteError
		switch {
		case errors.As(rerr, &nr) && len(nr.Risks) > 0 && nr.Relaxed != nil && len(nr.Overrides) == 0:
			block("BehindRisks", fmt.Sprintf("%v; add %s to the rollout's spec.acceptRisks to take it", rerr, strings.Join(nr.Risks, ", ")), nr.Risks)
		case errors.Is(rerr, path.ErrUnknownVersion):
			block("UnknownVersion", rerr.Error(), nil)
		case rerr != nil:
			block("NoRoute", rerr.Error(), nil)
		case len(route.Hops) == 0:
			dr.AtTarget++
		default:
			hops := controller.HopNames(route)
			k := current + "\x00" + strings.Join(hops, "\x00")
			if routes[k] == nil {
				routes[k] = &v1alpha1.PlannedRoute{From: current, Hops: hops}
			}
			routes[k].Clusters = append(routes[k].Clusters, cv.Name+" ("+waveOf[cv.Name]+")")
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

// targetSpec is cv's spec as the rollout sets it when cv starts.
func targetSpec(ur *v1alpha1.UpgradeRollout, cv *v1alpha1.ClusterVersion) v1alpha1.ClusterVersionSpec {
	spec := *cv.Spec.DeepCopy()
	spec.DesiredVersion = ur.Spec.DesiredVersion
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

// truncate keeps s within n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
