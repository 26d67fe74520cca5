package helm

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// getter is the genericclioptions.RESTClientGetter Helm needs, for a
// rest.Config and a namespace.
type getter struct {
	rc *rest.Config
	ns string
}

func newGetter(rc *rest.Config, ns string) *getter { return &getter{rc: rc, ns: ns} }

func (g *getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.rc), nil }

func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.rc))
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g *getter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	m := restmapper.NewDeferredDiscoveryRESTMapper(dc)
	return restmapper.NewShortcutExpander(m, dc, nil), nil
}

// ToRawKubeConfigLoader is a kubeconfig of the rest.Config, with the
// namespace as its context's.
func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	c := clientcmdapi.NewConfig()
	c.Clusters["c"] = &clientcmdapi.Cluster{Server: g.rc.Host, CertificateAuthorityData: g.rc.CAData,
		CertificateAuthority: g.rc.CAFile, InsecureSkipTLSVerify: g.rc.Insecure}
	c.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: g.rc.CertData, ClientKeyData: g.rc.KeyData,
		ClientCertificate: g.rc.CertFile, ClientKey: g.rc.KeyFile, Token: g.rc.BearerToken}
	c.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: g.ns}
	c.CurrentContext = "x"
	return clientcmd.NewDefaultClientConfig(*c, &clientcmd.ConfigOverrides{})
}
