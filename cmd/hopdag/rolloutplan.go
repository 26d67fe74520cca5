package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hopdag/hopdag/kube/api/v1alpha1"
	"github.com/hopdag/hopdag/kube/fleet"
)

// hopdag rollout plan: an UpgradeRollout's dry run without a cluster,
// from its YAML, ClusterVersion documents and the catalog, computed by the
// functions the UpgradeRollout controller's dry run calls (fleet.Decide,
// fleet.RouteOf).

// kindRolloutPlan is the kind of rollout plan -o json|yaml.
const kindRolloutPlan = "RolloutPlan"

// rolloutPlanCommand is hopdag rollout plan.
var rolloutPlanCommand = command{
	args:  "DIR -f ROLLOUT --clusters CVDIR|kube://[NAMESPACE]",
	short: "an UpgradeRollout's dry run: waves, routes, blocked clusters",
	summary: "print the dry run of the UpgradeRollout in -f, before it is applied: the ClusterVersions it selects among the documents of --clusters (YAML files of ClusterVersions, or of Lists of them, as kubectl get -o yaml writes them) or, with --clusters kube://NAMESPACE, among the ClusterVersions of that namespace in the cluster of --kubeconfig and --context (kube:// alone: the rollout's namespace), " +
		"per wave (canaries first) each with its current version, the target and the route's hops, as the UpgradeRollout controller computes them into status.dryRun; then the clusters at the target, then the blocked ones with the resolver's diagnostics (the risks to accept, no route). " +
		"Nothing is written, to the cluster or elsewhere. Exit 0 when it could plan (blocked clusters included), 1 when the rollout or a ClusterVersion does not parse, the cluster cannot be read, or the selector selects none.",
	run:     (*cli).rolloutPlan,
	example: "hopdag rollout plan testdata/catalog -f rollout.yaml --clusters clusters/\n  hopdag rollout plan testdata/catalog -f rollout.yaml --clusters kube://fleet --context mgmt",
}

// rolloutFlags are the flags of rollout plan.
type rolloutFlags struct {
	file, clusters *string
}

func (c *cli) rolloutPlanFlags() {
	c.ro.file = c.fs.StringP("filename", "f", "", "the UpgradeRollout YAML file (required)")
	c.ro.clusters = c.fs.String("clusters", "", "directory of ClusterVersion YAML documents, read recursively, or kube://NAMESPACE: the cluster's (required)")
	c.addOutput("text", "output format: text, json or yaml")
	c.kubeFlags()
	c.fs.Lookup("kubeconfig").Usage = "kubeconfig of the cluster of --clusters kube:// (default: $KUBECONFIG, then ~/.kube/config)"
}

// newRolloutCommand is hopdag rollout, whose one subcommand is plan.
func newRolloutCommand(e env, args []string, code *int) *cobra.Command {
	parent := &cobra.Command{
		Use:   "rollout",
		Short: "fleet rollouts (UpgradeRollout): plan",
		Long:  "hopdag rollout: fleet rollouts (UpgradeRollout) from the command line.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(e.stderr)
			cmd.Help()
			*code = exitUsage
			return nil
		},
	}
	parent.AddCommand(newCommand(e, "rollout plan", rolloutPlanCommand, args, code))
	return parent
}

// rolloutPlan is the document of rollout plan -o json|yaml.
type rolloutPlan struct {
	Rollout  string           `json:"rollout"`
	Target   string           `json:"target"`
	Clusters int              `json:"clusters"`
	Waves    []plannedWave    `json:"waves"`
	AtTarget []string         `json:"atTarget"`
	Blocked  []plannedBlocked `json:"blocked"`
}

// plannedWave is one wave: the clusters that upgrade in it.
type plannedWave struct {
	Name     string           `json:"name"`
	Clusters []plannedCluster `json:"clusters"`
}

type plannedCluster struct {
	Name    string   `json:"name"`
	Current string   `json:"current"`
	Hops    []string `json:"hops"`
}

type plannedBlocked struct {
	Name    string   `json:"name"`
	Wave    string   `json:"wave"`
	Current string   `json:"current"`
	Reason  string   `json:"reason"`
	Risks   []string `json:"risks,omitempty"`
	Message string   `json:"message"`
}

func (c *cli) rolloutPlan(ctx context.Context) int {
	if code := c.outputIn("text", "json", "yaml"); code != exitOK {
		return code
	}
	switch {
	case *c.ro.file == "":
		return c.usageError("-f is required: the UpgradeRollout YAML file")
	case *c.ro.clusters == "":
		return c.usageError("--clusters is required: a directory of ClusterVersion YAML documents, or kube://NAMESPACE")
	}
	if ns, ok := strings.CutPrefix(*c.ro.clusters, "kube://"); ok && strings.Contains(ns, "/") {
		return c.usageError("--clusters " + *c.ro.clusters + ": want kube://NAMESPACE (or kube:// for the rollout's namespace)")
	}
	p, err := c.newRolloutPlan(ctx)
	if err != nil {
		return c.fail1(err)
	}
	if *c.output != "text" {
		if err := c.print(kindRolloutPlan, p); err != nil {
			return c.fail1(err)
		}
		return exitOK
	}
	fmt.Fprint(c.stdout, p.text())
	return exitOK
}

// newRolloutPlan reads the rollout, its ClusterVersions and the catalog,
// and computes the dry run.
func (c *cli) newRolloutPlan(ctx context.Context) (*rolloutPlan, error) {
	ns, inCluster := strings.CutPrefix(*c.ro.clusters, "kube://")
	if !inCluster {
		ns = ""
	}
	ur, err := readRollout(*c.ro.file, ns)
	if err != nil {
		return nil, err
	}
	var all []v1alpha1.ClusterVersion
	var nss map[string]labels.Set
	if inCluster {
		all, nss, err = c.clusterVersionsIn(ctx, ur)
	} else {
		all, nss, err = readClusterVersions(*c.ro.clusters)
	}
	if err != nil {
		return nil, err
	}
	cvs, err := selected(ur, all, nss)
	if err != nil {
		return nil, err
	}
	if len(cvs) == 0 {
		where, check := "in namespace "+ur.Namespace, "the ClusterVersions' namespace"
		if ur.Spec.NamespaceSelector != nil {
			where, check = "in the namespaces its spec.namespaceSelector matches", "the namespaces' labels (Namespace documents in --clusters DIR)"
		}
		return nil, fmt.Errorf("UpgradeRollout %s/%s (%s): its spec.selector selects none of the %d ClusterVersions of --clusters %s %s: check the selector's labels and %s",
			ur.Namespace, ur.Name, *c.ro.file, len(all), *c.ro.clusters, where, check)
	}
	cat, err := c.catalog()
	if err != nil {
		return nil, err
	}
	d, err := fleet.Decide(ur, cvs, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", *c.ro.file, err)
	}
	byName := map[string]*v1alpha1.ClusterVersion{}
	for i := range cvs {
		byName[fleet.MemberKey(ur, &cvs[i])] = &cvs[i]
	}
	p := &rolloutPlan{Rollout: ur.Namespace + "/" + ur.Name, Target: string(ur.Spec.DesiredVersion), Clusters: len(cvs),
		Waves: make([]plannedWave, len(d.Waves)), AtTarget: []string{}, Blocked: []plannedBlocked{}}
	for i, w := range d.Waves {
		p.Waves[i] = plannedWave{Name: w.Name, Clusters: []plannedCluster{}}
		for _, name := range w.Members {
			r := fleet.RouteOf(cat, ur, byName[name])
			switch {
			case r.Reason != "":
				p.Blocked = append(p.Blocked, plannedBlocked{Name: name, Wave: w.Name, Current: r.Current, Reason: r.Reason, Risks: r.Risks, Message: cliText(r.Message)})
			case len(r.Hops) == 0:
				p.AtTarget = append(p.AtTarget, name)
			default:
				p.Waves[i].Clusters = append(p.Waves[i].Clusters, plannedCluster{Name: name, Current: r.Current, Hops: r.Hops})
			}
		}
	}
	slices.Sort(p.AtTarget)
	slices.SortFunc(p.Blocked, func(a, b plannedBlocked) int { return cmp.Compare(a.Name, b.Name) })
	return p, nil
}

// text is the plan as rollout plan prints it.
func (p *rolloutPlan) text() string {
	var b strings.Builder
	going := 0
	for _, w := range p.Waves {
		going += len(w.Clusters)
	}
	fmt.Fprintf(&b, "UpgradeRollout %s to %s: %d %s in %d %s: %d to upgrade, %d at the target, %d blocked\n",
		p.Rollout, p.Target, p.Clusters, plural(p.Clusters, "cluster"), len(p.Waves), plural(len(p.Waves), "wave"), going, len(p.AtTarget), len(p.Blocked))
	blocked := map[string]int{}
	for _, bl := range p.Blocked {
		blocked[bl.Wave]++
	}
	for i, w := range p.Waves {
		fmt.Fprintf(&b, "\nwave %d %s: %d to upgrade", i+1, w.Name, len(w.Clusters))
		if n := blocked[w.Name]; n > 0 {
			fmt.Fprintf(&b, ", %d blocked (below)", n)
		}
		b.WriteString("\n")
		width := 0
		for _, cl := range w.Clusters {
			width = max(width, len(cl.Name))
		}
		for _, cl := range w.Clusters {
			fmt.Fprintf(&b, "  %-*s  %s -> %s, %d %s\n", width, cl.Name, cl.Current, p.Target, len(cl.Hops), plural(len(cl.Hops), "hop"))
			for j, h := range cl.Hops {
				fmt.Fprintf(&b, "    %d. %s\n", j+1, h)
			}
		}
	}
	if len(p.AtTarget) > 0 {
		fmt.Fprintf(&b, "\nat the target %s: %s\n", p.Target, strings.Join(p.AtTarget, ", "))
	}
	if len(p.Blocked) > 0 {
		fmt.Fprintf(&b, "\nblocked: %d\n", len(p.Blocked))
		for _, bl := range p.Blocked {
			fmt.Fprintf(&b, "  %s (wave %s) at %s: %s", bl.Name, bl.Wave, bl.Current, bl.Reason)
			if len(bl.Risks) > 0 {
				fmt.Fprintf(&b, ", accept %s", strings.Join(bl.Risks, ", "))
			}
			fmt.Fprintf(&b, "\n    %s\n", strings.ReplaceAll(bl.Message, "\n", "\n    "))
		}
	}
	return b.String()
}

// selected are the ClusterVersions of all that ur selects, as the
// controller lists them: matching its spec.selector, in its namespace
// or, with spec.namespaceSelector, in the namespaces whose labels (nss;
// a namespace without an entry has only its kubernetes.io/metadata.name,
// as the API server sets it) match.
func selected(ur *v1alpha1.UpgradeRollout, all []v1alpha1.ClusterVersion, nss map[string]labels.Set) ([]v1alpha1.ClusterVersion, error) {
	sel, err := metav1.LabelSelectorAsSelector(&ur.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("UpgradeRollout %s/%s: spec.selector: %w", ur.Namespace, ur.Name, err)
	}
	in := func(ns string) bool { return ns == ur.Namespace }
	if ur.Spec.NamespaceSelector != nil {
		nsSel, err := metav1.LabelSelectorAsSelector(ur.Spec.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("UpgradeRollout %s/%s: spec.namespaceSelector: %w", ur.Namespace, ur.Name, err)
		}
		in = func(ns string) bool {
			set, ok := nss[ns]
			if !ok {
				set = labels.Set{corev1.LabelMetadataName: ns}
			}
			return nsSel.Matches(set)
		}
	}
	var out []v1alpha1.ClusterVersion
	for _, cv := range all {
		if in(cv.Namespace) && sel.Matches(labels.Set(cv.Labels)) {
			out = append(out, cv)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.ClusterVersion) int {
		return cmp.Compare(fleet.MemberKey(ur, &a), fleet.MemberKey(ur, &b))
	})
	return out, nil
}

// readRollout reads the one UpgradeRollout of file. Without a
// metadata.namespace it is in ns (that of --clusters kube://NS), else in
// default; with one, ns must be it or "".
func readRollout(file, ns string) (*v1alpha1.UpgradeRollout, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the UpgradeRollout: %w", err)
	}
	var ur *v1alpha1.UpgradeRollout
	err = eachDocument(file, data, func(at string, kind string, doc []byte) error {
		if kind != "UpgradeRollout" || ur != nil {
			return fmt.Errorf("%s: a %s document; -f takes a file of one UpgradeRollout", at, cmp.Or(kind, "kindless"))
		}
		ur = &v1alpha1.UpgradeRollout{}
		return strictJSON(at, doc, ur)
	})
	if err != nil {
		return nil, err
	}
	if ur == nil {
		return nil, fmt.Errorf("%s: no UpgradeRollout document in it", file)
	}
	if ur.Namespace != "" && ns != "" && ns != ur.Namespace {
		return nil, fmt.Errorf("%s: UpgradeRollout %s/%s selects the ClusterVersions of its own namespace, %s, not of --clusters kube://%s: give --clusters kube://%s (or kube://)", file, ur.Namespace, ur.Name, ur.Namespace, ns, ur.Namespace)
	}
	ur.Namespace = cmp.Or(ur.Namespace, ns, "default")
	if ur.Spec.DesiredVersion == "" {
		return nil, fmt.Errorf("%s: UpgradeRollout %s/%s has no spec.desiredVersion: set the version to roll out", file, ur.Namespace, ur.Name)
	}
	return ur, nil
}

// readClusterVersions reads the ClusterVersion documents (and Lists of
// them) of the YAML files under dir, and the labels of the Namespace
// documents there (for a rollout's spec.namespaceSelector).
func readClusterVersions(dir string) ([]v1alpha1.ClusterVersion, map[string]labels.Set, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("--clusters: %w", err)
	} else if !fi.IsDir() {
		return nil, nil, fmt.Errorf("--clusters %s: not a directory; give the directory of the ClusterVersion YAML files", dir)
	}
	var out []v1alpha1.ClusterVersion
	nss := map[string]labels.Set{}
	addNamespace := func(at string, doc []byte) error {
		var ns corev1.Namespace
		if err := json.Unmarshal(doc, &ns); err != nil {
			return fmt.Errorf("%s: Namespace: %w", at, err)
		}
		if ns.Name == "" {
			return fmt.Errorf("%s: Namespace without metadata.name: name it", at)
		}
		set := labels.Set{corev1.LabelMetadataName: ns.Name}
		for k, v := range ns.Labels {
			set[k] = v
		}
		nss[ns.Name] = set
		return nil
	}
	add := func(at string, doc []byte) error {
		var cv v1alpha1.ClusterVersion
		if err := strictJSON(at, doc, &cv); err != nil {
			return err
		}
		if cv.Name == "" {
			return fmt.Errorf("%s: ClusterVersion without metadata.name: name it", at)
		}
		cv.Namespace = cmp.Or(cv.Namespace, "default")
		out = append(out, cv)
		return nil
	}
	err := filepath.WalkDir(dir, func(file string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || (filepath.Ext(file) != ".yaml" && filepath.Ext(file) != ".yml") {
			return err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		return eachDocument(file, data, func(at, kind string, doc []byte) error {
			switch kind {
			case "ClusterVersion":
				return add(at, doc)
			case "Namespace":
				return addNamespace(at, doc)
			case "List", "ClusterVersionList", "NamespaceList":
				var l struct {
					Items []json.RawMessage `json:"items"`
				}
				if err := json.Unmarshal(doc, &l); err != nil {
					return fmt.Errorf("%s: %s: %w", at, kind, err)
				}
				for i, item := range l.Items {
					itemAt := fmt.Sprintf("%s (items[%d])", at, i)
					var k struct {
						Kind string `json:"kind"`
					}
					_ = json.Unmarshal(item, &k)
					var err error
					switch {
					case k.Kind == "Namespace" || kind == "NamespaceList":
						err = addNamespace(itemAt, item)
					default:
						err = add(itemAt, item)
					}
					if err != nil {
						return err
					}
				}
				return nil
			}
			return fmt.Errorf("%s: a %s document; --clusters takes ClusterVersions and Namespaces (and Lists of them) only", at, cmp.Or(kind, "kindless"))
		})
	})
	return out, nss, err
}

// eachDocument calls f with each non-empty YAML document of data as
// JSON, its kind, and where it starts (file:line).
func eachDocument(file string, data []byte, f func(at, kind string, doc []byte) error) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if len(n.Content) == 0 || n.Content[0].Tag == "!!null" {
			continue
		}
		at := fmt.Sprintf("%s:%d", file, n.Content[0].Line)
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		doc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		var head struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(doc, &head) // not an object: kindless
		if err := f(at, head.Kind, doc); err != nil {
			return err
		}
	}
}

// strictJSON decodes doc into v, refusing fields v does not have.
func strictJSON(at string, doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

// clusterVersionsIn lists the ClusterVersions that ur selects in the
// cluster of --kubeconfig and --context (rollout plan --clusters
// kube://): in its namespace or, with spec.namespaceSelector, in every
// namespace, with the namespaces' labels. It only reads.
func (c *cli) clusterVersionsIn(ctx context.Context, ur *v1alpha1.UpgradeRollout) ([]v1alpha1.ClusterVersion, map[string]labels.Set, error) {
	where := "--clusters kube://" + ur.Namespace
	sel, err := metav1.LabelSelectorAsSelector(&ur.Spec.Selector)
	if err != nil {
		return nil, nil, fmt.Errorf("UpgradeRollout %s/%s: spec.selector: %w", ur.Namespace, ur.Name, err)
	}
	rc, err := restConfig(c.kubeConfig(), "--clusters DIR, a directory of ClusterVersion YAML documents (kubectl get clusterversions -n NS -o yaml > DIR/clusters.yaml)")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	kc, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	scope := "namespace " + ur.Namespace
	if ur.Spec.NamespaceSelector == nil {
		opts = append(opts, client.InNamespace(ur.Namespace))
	} else {
		scope = "every namespace (spec.namespaceSelector)"
	}
	var l v1alpha1.ClusterVersionList
	err = kc.List(ctx, &l, opts...)
	switch {
	case meta.IsNoMatchError(err):
		return nil, nil, fmt.Errorf("%s: the cluster %s has no ClusterVersion kind: install hopdag's CRDs (kubectl apply -k kube/config/crd), or give --clusters DIR", where, rc.Host)
	case apierrors.IsForbidden(err):
		return nil, nil, fmt.Errorf("%s: %w: this command needs list on clusterversions.hopdag.io in %s (kubectl auth can-i list clusterversions.hopdag.io -n %s)", where, err, scope, ur.Namespace)
	case err != nil:
		return nil, nil, fmt.Errorf("%s: listing the ClusterVersions: %w", where, err)
	}
	if ur.Spec.NamespaceSelector == nil {
		return l.Items, nil, nil
	}
	var nl corev1.NamespaceList
	if err := kc.List(ctx, &nl); err != nil {
		return nil, nil, fmt.Errorf("%s: listing the namespaces, for spec.namespaceSelector: %w", where, err)
	}
	nss := map[string]labels.Set{}
	for _, ns := range nl.Items {
		nss[ns.Name] = labels.Set(ns.Labels)
	}
	return l.Items, nss, nil
}
