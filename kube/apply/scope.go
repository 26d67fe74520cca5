package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hopdag/hopdag/components"
)

var _ components.ScopeResolver = (*Applier)(nil)

// ClusterScoped reports whether group/kind is cluster-scoped, as the REST
// mapper the Applier applies with knows it (cached discovery), so that
// components.Manifest gives no namespace to a custom resource of a
// cluster-scoped CRD that another component installed. A kind the cache
// does not know resets it and is looked up once more, as an apply does (a
// CRD applied since the cache was filled); a kind the API server does not
// serve then is not known (false, false, nil): its CRD is not installed
// yet. A failed discovery is an error; a group whose discovery alone
// failed (an aggregated API that is down) leaves its kinds unknown.
func (a *Applier) ClusterScoped(group, kind string) (cluster, known bool, err error) {
	m, err := a.mapping(schema.GroupKind{Group: group, Kind: kind}, "")
	switch {
	case meta.IsNoMatchError(err):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("apply: discover the scope of %s: %w", schema.GroupKind{Group: group, Kind: kind}, err)
	}
	return m.Scope.Name() == meta.RESTScopeNameRoot, true, nil
}
