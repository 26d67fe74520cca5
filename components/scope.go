package components

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// clusterScoped are the built-in kinds that live outside namespaces, by
// "Kind.group" ("Kind" for the core group). Custom kinds are cluster-scoped
// when a CustomResourceDefinition of the same render says so, when given
// to WithClusterScoped, or when the Applier's ScopeResolver says so.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"ClusterRole.rbac.authorization.k8s.io": true, "ClusterRoleBinding.rbac.authorization.k8s.io": true,
	"CustomResourceDefinition.apiextensions.k8s.io": true,
	"APIService.apiregistration.k8s.io":             true,
	"StorageClass.storage.k8s.io":                   true, "CSIDriver.storage.k8s.io": true, "CSINode.storage.k8s.io": true,
	"VolumeAttachment.storage.k8s.io":                               true,
	"PriorityClass.scheduling.k8s.io":                               true,
	"IngressClass.networking.k8s.io":                                true,
	"RuntimeClass.node.k8s.io":                                      true,
	"MutatingWebhookConfiguration.admissionregistration.k8s.io":     true,
	"ValidatingWebhookConfiguration.admissionregistration.k8s.io":   true,
	"ValidatingAdmissionPolicy.admissionregistration.k8s.io":        true,
	"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io": true,
	"CertificateSigningRequest.certificates.k8s.io":                 true,
	"FlowSchema.flowcontrol.apiserver.k8s.io":                       true,
	"PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io":       true,
	"DeviceClass.resource.k8s.io":                                   true,
	"ResourceSlice.resource.k8s.io":                                 true,
	"DeviceTaintRule.resource.k8s.io":                               true,
	"VolumeAttributesClass.storage.k8s.io":                          true,
	"IPAddress.networking.k8s.io":                                   true,
	"ServiceCIDR.networking.k8s.io":                                 true,
	"MutatingAdmissionPolicy.admissionregistration.k8s.io":          true,
	"MutatingAdmissionPolicyBinding.admissionregistration.k8s.io":   true,
	"ClusterTrustBundle.certificates.k8s.io":                        true,
	"StorageVersionMigration.storagemigration.k8s.io":               true,
}

// groupKind is "Kind.group", or "Kind" for the core group.
func groupKind(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// namespaceOf is the namespace the component's namespaced objects get when
// they set none: its "namespace" param, else the Manifest's.
func (m *Manifest) namespaceFor(params map[string]string) string {
	if ns := params["namespace"]; ns != "" {
		return ns
	}
	return m.namespace
}

// ScopeResolver is an optional ability of an Applier: ClusterScoped
// reports whether the kind (group "" for the core group) is cluster-scoped
// where the Applier applies, known false when it does not know the kind
// (its CRD is not installed yet). Manifest asks it, while rendering, about
// the kinds of its objects that neither its table of built-in
// cluster-scoped kinds, nor a CustomResourceDefinition of the same render,
// nor WithClusterScoped decide: a custom resource whose CRD another
// component installs, and namespaced built-in kinds too (ConfigMap: the
// table lists only cluster-scoped kinds, and a cluster knows kinds newer
// than the table). Each kind is asked once per render, in sorted order. A
// kind it does not know is namespaced, as without a ScopeResolver; an
// error fails the render with a *ScopeError. Appliers without the ability
// (the Recorder, Dir) render as before, without asking anyone.
//
// It takes no context because rendering has none: Render, Validate and
// ValidateHop have none to give (the last two implement the context-free
// runner.Validator and runner.HopValidator), and a Kubernetes REST mapper,
// what answers it for kube/apply, takes none either. It is called from
// many goroutines at once, as the Applier's other methods are.
type ScopeResolver interface {
	ClusterScoped(group, kind string) (cluster, known bool, err error)
}

// ScopeError is a ScopeResolver that could not tell whether a kind is
// cluster-scoped (the discovery of the cluster's API failed). Run and
// RunPhase return it, unlike other rendering errors, without
// runner.Permanent: the lookup may succeed when the component is retried.
type ScopeError struct {
	// Group and Kind are the kind asked about (Group "" for the core group).
	Group, Kind string
	Err         error
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("%scannot tell whether %s is cluster-scoped, which decides the namespace of its objects: %s", prefix, groupKind(e.Group, e.Kind), trim(e.Err.Error()))
}

// Unwrap returns the resolver's error.
func (e *ScopeError) Unwrap() error { return e.Err }

// crdScope is the kind a CustomResourceDefinition defines, as "Kind.group",
// and whether it is cluster-scoped; ok is false for other objects.
func crdScope(o Object) (gk string, cluster, ok bool) {
	if o.Kind != "CustomResourceDefinition" {
		return "", false, false
	}
	spec, _ := o.Content["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	g, _ := spec["group"].(string)
	k, _ := names["kind"].(string)
	if k == "" {
		return "", false, false
	}
	return groupKind(g, k), spec["scope"] == "Cluster", true
}

// resolveScopes asks r about every kind of objs that the built-in kinds,
// the CRDs among objs and extra leave undecided, once each, in sorted
// order, and returns the kinds it says are cluster-scoped ("Kind.group"
// names; nil for none). The first error stops it: when discovery fails it
// fails for every kind.
func resolveScopes(r ScopeResolver, objs []Object, extra map[string]bool) (map[string]bool, error) {
	decided := map[string]bool{}
	for _, o := range objs {
		if gk, _, ok := crdScope(o); ok {
			decided[gk] = true
		}
	}
	ask := map[string][2]string{}
	for _, o := range objs {
		ref := o.Ref()
		gk := groupKind(ref.Group, ref.Kind)
		if _, builtIn := clusterScoped[gk]; builtIn || decided[gk] || extra[gk] {
			continue
		}
		ask[gk] = [2]string{ref.Group, ref.Kind}
	}
	var cluster map[string]bool
	for _, gk := range slices.Sorted(maps.Keys(ask)) {
		g, k := ask[gk][0], ask[gk][1]
		c, known, err := r.ClusterScoped(g, k)
		if err != nil {
			return nil, &ScopeError{Group: g, Kind: k, Err: err}
		}
		if c && known {
			if cluster == nil {
				cluster = map[string]bool{}
			}
			cluster[gk] = true
		}
	}
	return cluster, nil
}

// defaultNamespaces gives every namespaced object of docs without a
// namespace the namespace ns, and checks that cluster-scoped ones have
// none. Scope comes from the built-in kinds, the CRDs among docs, and
// extra ("Kind.group" names).
func defaultNamespaces(docs []document, ns string, extra map[string]bool) []error {
	scope := maps.Clone(clusterScoped)
	maps.Copy(scope, extra)
	for _, d := range docs {
		if gk, cluster, ok := crdScope(d.obj); ok {
			scope[gk] = cluster
		}
	}
	var errs []error
	for i := range docs {
		o := &docs[i].obj
		r := o.Ref()
		switch cluster := scope[groupKind(r.Group, r.Kind)]; {
		case cluster && o.Namespace != "":
			errs = append(errs, &DocumentError{Manifest: o.Manifest, Doc: o.Doc, Line: docs[i].line,
				Err: fmt.Errorf("%s %s is cluster-scoped but sets metadata.namespace %s; remove it", o.Kind, o.Name, o.Namespace)})
		case !cluster && o.Namespace == "":
			o.Namespace = ns
		}
	}
	return errs
}

// own returns o with its namespace and the ownership labels written into
// its Content and YAML. The Content is copied, never modified.
func own(o Object, labels map[string]string) (Object, error) {
	c := maps.Clone(o.Content)
	md, _ := c["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	ls, _ := md["labels"].(map[string]any)
	ls = maps.Clone(ls)
	if ls == nil {
		ls = map[string]any{}
	}
	for k, v := range labels {
		ls[k] = v
	}
	md["labels"] = ls
	if o.Namespace != "" {
		md["namespace"] = o.Namespace
	}
	c["metadata"] = md
	o.Content = c
	// The YAML is decoded again rather than kept from rendering, so that an
	// Object stays a plain value; a node keeps the order of keys and the
	// comments, which re-encoding Content would lose.
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(o.YAML), &doc); err != nil || len(doc.Content) == 0 {
		return o, fmt.Errorf("%s%s: decode again to add ownership labels: %v", prefix, o, err)
	}
	n := doc.Content[0]
	meta := mappingAt(n, "metadata")
	if o.Namespace != "" {
		setScalar(meta, "namespace", o.Namespace)
	}
	lm := mappingAt(meta, "labels")
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		setScalar(lm, k, labels[k])
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return o, fmt.Errorf("%s%s: encode with ownership labels: %w", prefix, o, err)
	}
	o.YAML = b.String()
	return o, nil
}

// mappingAt returns the mapping value of key in the mapping m, adding an
// empty block mapping when there is none (or when it is null).
func mappingAt(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			if v.Kind != yaml.MappingNode {
				*v = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			return v
		}
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// setScalar sets key of the mapping m to the string value.
func setScalar(m *yaml.Node, key, value string) {
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}
