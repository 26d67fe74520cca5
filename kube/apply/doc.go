// Package apply is hopdag's Kubernetes Applier: server-side apply through
// client-go's dynamic client, prune from an inventory kept in the cluster,
// and readiness with kstatus. An *Applier is the components.Applier,
// components.ReadyChecker, components.InventoryStore and
// components.ScopeResolver of a components.Manifest:
//
//	applier, err := apply.New(mgr.GetConfig())            // a *rest.Config
//	manifest := components.NewManifest(applier, components.WithInstance("prod-eu-1"))
//
// What it does, and in which order:
//
//   - Apply: Namespaces and CustomResourceDefinitions first; then, once
//     every CRD is Established and the discovery cache is refreshed, the
//     rest (see ApplyAll). The objects of one stage are applied
//     concurrently (WithParallelism, 8 by default), so their order within
//     the stage is not kept; WithParallelism(1) keeps it, for objects
//     that depend on one another without a stage between them (an
//     admission webhook's Service before what the webhook admits). Every
//     object goes through server-side apply
//     with field manager "hopdag" (WithFieldManager), Force off
//     (WithForce); a field another manager owns is a *ConflictError that
//     names the managers and the fields. Kinds are resolved with a REST
//     mapper over cached discovery, refreshed when a kind is unknown.
//   - Ownership: an object Manifest labels as component C of instance I
//     (hopdag.io/component, hopdag.io/instance) that exists labelled as
//     another component's or another instance's is not applied: it is an
//     *OwnerError (ErrOwned, runner.Permanent) naming the object, its
//     owner and the fixes, since once relabelled the prune of either
//     owner would delete it from under the other. WithTakeOver takes it
//     over, reported Configured "(taken over from component C of
//     instance I)"; the old owner's prune then leaves it. An object that
//     exists with neither label (kubectl created it) is adopted: applied
//     with the labels, reported Configured "(adopted: it had no hopdag
//     ownership labels)", in a dry run too, and from then on prunable by
//     the component, prune deleting only what is labelled as the
//     component's. The check reads the labels of the object the apply
//     reads anyway: it costs no request.
//   - Scope (ClusterScoped): the Manifest asks, while it renders, whether
//     a kind that neither its built-in kinds, nor a CRD of the same
//     render, nor components.WithClusterScoped decide is cluster-scoped;
//     the answer comes from the same REST mapper, refreshed once when the
//     kind is unknown. So a custom resource that sets no namespace, of a
//     cluster-scoped CRD another component installed, stays
//     cluster-scoped (its identity, in the inventory too, has no
//     namespace), and one of a namespaced CRD gets the component's
//     namespace. A kind the API server does not serve yet (at plan time,
//     before the hop that installs its CRD) is namespaced; a failed
//     discovery fails the render with a *components.ScopeError, which the
//     runner may retry. The lookup takes no context (the REST mapper's
//     takes none): it is bounded only by the rest.Config's Timeout.
//   - Apply of an object being deleted (it exists with a
//     deletionTimestamp: a prune's foreground deletion still running, or
//     another finalizer or a grace period holding it): it is not applied
//     to, since the deletion would then take the applied object away;
//     the apply waits until it is gone (reading it at intervals from 50ms
//     to 1s, as long as the context lasts), then creates it, reported
//     Created "(was being deleted; recreated once gone)". A context that
//     ends first is a *TerminatingError naming the object, since when it
//     is being deleted and its finalizers. The wait has no limit of its
//     own: without a deadline on the context (a component's timeout,
//     runner.WithDefaultTimeout), a finalizer no controller removes blocks
//     the apply. This is what a rollback, or an upgrade, meets when it
//     renders again an object a prune just deleted. A dry run does not
//     wait: it dry-run applies the object as it is and reports it Created
//     "(being deleted; recreated once gone)".
//   - Inventory: what each component applied is a ConfigMap in the
//     inventory namespace (see Inventories for the format and why a
//     ConfigMap). components.Manifest reads them to refuse an object
//     another component owns and to find what to prune.
//   - Prune (Delete): foreground propagation, other objects before CRDs
//     before Namespaces, only objects still labelled as the component's,
//     conditional on the UID and resourceVersion read.
//   - Ready: kstatus Current, plus an optional named condition
//     (condition: Ready=True); an *UnreadyError names every object not
//     ready and why.
//   - Dry run (WithDryRun): server-side dry-run applies, prunes and
//     inventories only reported; the ChangeSet (WithReporter, or ApplyAll
//     and Prune directly) says per object created, configured, unchanged
//     or pruned. An object in a namespace the same dry run creates (the
//     API server refuses content in a namespace that does not exist) is
//     reported Created "(its namespace is created by this dry run; not
//     checked by the server)"; the Applier remembers those namespaces for
//     its later Applies. DryRunHop is the plan's dry run against a
//     cluster: every manifest component of a hop, dependencies first,
//     through a Manifest over one dry-run Applier, nothing written.
//     Each hop is compared with the live cluster, not with what the hops
//     before it would have left: for a plan of several hops, only the
//     first hop's report is exact.
//
// Permissions: for itself, an Applier needs ConfigMaps in its inventory
// namespace (list, patch) and Namespaces (create, patch: it applies that
// namespace), which kube/config/rbac/role.yaml grants; for the objects it
// applies, prunes and waits for, what they need (get, patch, create,
// delete of their kinds); and for a Namespace's prune, list of every kind
// the Namespace may hold (a Namespace it may not list it leaves, Skipped,
// saying so).
//
// Every verb returns or reports a ChangeSet, one Change per object, in the
// order the objects were given. The package registers nothing in any
// scheme: objects stay unstructured.
//
// Concurrency: an Applier is safe for concurrent use; each call makes at
// most WithParallelism requests at once; an apply waiting for an object
// being deleted holds one of them. Cost: Apply reads and applies each
// object (two requests; one more read per poll for an object being
// deleted), Prune reads and deletes, Ready reads each object it checks
// per poll, Inventories is one list, ClusterScoped reads the discovery
// cache (the whole discovery again for a kind the cache does not know).
package apply
