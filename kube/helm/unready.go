package helm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/hopdag/hopdag/components"
)

// unreadyWait bounds the reads that describe what was not ready: the
// task's deadline has passed by then.
const unreadyWait = 5 * time.Second

// unready lists, for the error of an install or upgrade whose deadline
// passed during Helm's wait, the objects of the release's last revision
// that kstatus does not call Current, sorted: "Deployment.apps apps/app:
// InProgress: Replicas: 0/1". Helm's own error then says only that the
// context's deadline passed. It is "" when every object is ready or they
// cannot be read (the error says so then, in brief). Its reads run on
// their own goroutine, given unreadyWait in all (the API server may be
// what made the wait slow): past it the answer says so and the reads end
// on their own.
func unready(cfg *action.Configuration, name string) string {
	res := make(chan string, 1)
	go func() { res <- readUnready(cfg, name) }()
	select {
	case s := <-res:
		return s
	case <-time.After(unreadyWait):
		return fmt.Sprintf("(what was not ready could not be read within %v)", unreadyWait)
	}
}

func readUnready(cfg *action.Configuration, name string) string {
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
		gvk := info.Mapping.GroupVersionKind
		what := components.Ref{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: info.Namespace, Name: info.Name}.String()
		u, err := dyn.Resource(info.Mapping.Resource).Namespace(info.Namespace).Get(ctx, info.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, what+": "+status.NotFoundStatus.String())
			continue
		case err != nil:
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
	return "not ready: " + strings.Join(out, "; ")
}
