package helm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// unreadyWait bounds the reads that describe what was not ready: the
// task's ctx is done by then.
const unreadyWait = 5 * time.Second

// unready lists, for the error of an install or upgrade whose ctx ended
// during Helm's wait, the objects of the release's last revision that
// kstatus does not call Current, sorted: "Deployment apps/app: InProgress:
// Deployment does not have minimum availability". Helm's own error then
// says only that the context's deadline passed. It is "" when every object
// is ready or they cannot be read (the error says so then, in brief).
func unready(cfg *action.Configuration, name string) string {
	hs, err := history(cfg, name)
	if err != nil || len(hs) == 0 {
		return ""
	}
	kc, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		return ""
	}
	infos, err := kc.Build(strings.NewReader(hs[len(hs)-1].Manifest), false)
	if err != nil {
		return "(the release's objects could not be listed: " + err.Error() + ")"
	}
	dyn, err := kc.Factory.DynamicClient()
	if err != nil {
		return "(the release's objects could not be read: " + err.Error() + ")"
	}
	ctx, cancel := context.WithTimeout(context.Background(), unreadyWait)
	defer cancel()
	var out []string
	for _, info := range infos {
		what := info.Mapping.GroupVersionKind.Kind + " " + info.Name
		if info.Namespace != "" {
			what = info.Mapping.GroupVersionKind.Kind + " " + info.Namespace + "/" + info.Name
		}
		u, err := dyn.Resource(info.Mapping.Resource).Namespace(info.Namespace).Get(ctx, info.Name, metav1.GetOptions{})
		if err != nil {
			out = append(out, what+": "+err.Error())
			continue
		}
		res, err := status.Compute(u)
		switch {
		case err != nil:
			out = append(out, what+": kstatus: "+err.Error())
		case res.Status != status.CurrentStatus:
			s := what + ": " + res.Status.String()
			if res.Message != "" {
				s += ": " + res.Message
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("not ready: %s", strings.Join(out, "; "))
}
