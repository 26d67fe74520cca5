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
// when a CustomResourceDefinition of the same render says so, or when
// given to WithClusterScoped.
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

// defaultNamespaces gives every namespaced object of docs without a
// namespace the namespace ns, and checks that cluster-scoped ones have
// none. Scope comes from the built-in kinds, the CRDs among docs, and
// extra ("Kind.group" names).
func defaultNamespaces(docs []document, ns string, extra map[string]bool) []error {
	scope := maps.Clone(clusterScoped)
	maps.Copy(scope, extra)
	for _, d := range docs {
		o := d.obj
		if o.Kind != "CustomResourceDefinition" {
			continue
		}
		spec, _ := o.Content["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		g, _ := spec["group"].(string)
		k, _ := names["kind"].(string)
		if k != "" {
			scope[groupKind(g, k)] = spec["scope"] == "Cluster"
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
