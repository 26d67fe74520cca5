package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/hopdag/hopdag/components"
	"github.com/hopdag/hopdag/release"
)

// Ready reports whether the objects a health check names are ready (it
// implements components.ReadyChecker; Manifest polls it every
// check.Interval until check.Timeout). The check's params choose and test:
//
//	kind       the objects' kind, "Kind" or "Kind.group" (default: every object)
//	name       their name
//	namespace  their namespace
//	condition  "Type=Status" (e.g. "Ready=True"): a condition each must also have
//
// An object is ready when kstatus (sigs.k8s.io/cli-utils/pkg/kstatus)
// computes Current for it — the rules Flux, kpt and kubectl's wait share:
// observedGeneration caught up, Deployments' replicas updated and
// available, Jobs complete, CRDs established, custom resources without a
// Ready=False or Reconciling=True condition — and, with a condition param,
// it has that condition. Not ready is an *UnreadyError that matches
// components.ErrPending, naming every object not ready, its kstatus
// message and its conditions; an object kstatus says Failed (a Job out of
// retries, a Deployment past its progress deadline) is an *UnreadyError
// matching ErrFailed, which stops the wait. A check that selects no object
// is an error. Under WithDryRun every check is ready at once.
func (a *Applier) Ready(ctx context.Context, check release.HealthCheck, objs []components.Object) (bool, error) {
	if a.cfg.dryRun {
		return true, nil
	}
	sel, err := selectObjects(check, objs)
	if err != nil {
		return false, err
	}
	var want *condition
	if c := check.Params["condition"]; c != "" {
		typ, st, ok := strings.Cut(c, "=")
		if !ok || typ == "" || st == "" {
			return false, fmt.Errorf("apply: health check %s: condition %q: want Type=Status, e.g. Ready=True", check.Name, c)
		}
		want = &condition{typ: typ, status: st}
	}
	var (
		mu      sync.Mutex
		unready []Unready
		failed  bool
	)
	errs := a.forEach(ctx, len(sel), func(i int) error {
		u, ok, err := a.readyOne(ctx, sel[i], want)
		if err != nil || ok {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		unready = append(unready, u)
		failed = failed || u.Status == string(status.FailedStatus)
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	if len(unready) == 0 {
		return true, nil
	}
	slices.SortFunc(unready, func(x, y Unready) int { return strings.Compare(x.Object.String(), y.Object.String()) })
	return false, &UnreadyError{Check: check.Name, Objects: unready, Failed: failed}
}

// selectObjects returns the refs of the objects the check's params name.
func selectObjects(check release.HealthCheck, objs []components.Object) ([]components.Ref, error) {
	p := check.Params
	var out []components.Ref
	for _, o := range objs {
		r := o.Ref()
		if k := p["kind"]; k != "" && k != r.Kind && k != r.Kind+"."+r.Group {
			continue
		}
		if n := p["name"]; n != "" && n != r.Name {
			continue
		}
		if ns := p["namespace"]; ns != "" && ns != r.Namespace {
			continue
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("apply: health check %s selects no object of the component (params kind=%q name=%q namespace=%q)", check.Name, p["kind"], p["name"], p["namespace"])
	}
	return out, nil
}

// readyOne reads one object and computes its readiness.
func (a *Applier) readyOne(ctx context.Context, r components.Ref, want *condition) (Unready, bool, error) {
	res, _, err := a.resource(r)
	if err != nil {
		return Unready{}, false, err
	}
	u, err := res.Get(ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Unready{Object: r, Status: string(status.NotFoundStatus), Message: "not found"}, false, nil
	} else if err != nil {
		return Unready{}, false, &ObjectError{Object: r, Op: "wait", Err: err}
	}
	res2, err := status.Compute(u)
	if err != nil {
		return Unready{}, false, &ObjectError{Object: r, Op: "wait", Err: fmt.Errorf("kstatus: %w", err)}
	}
	conds := conditionsOf(u)
	ur := Unready{Object: r, Status: string(res2.Status), Message: res2.Message, Conditions: conds.strings()}
	if res2.Status != status.CurrentStatus {
		return ur, false, nil
	}
	if want != nil {
		if c, ok := conds[want.typ]; !ok || c.status != want.status {
			ur.Status = "ConditionNotMet"
			ur.Message = fmt.Sprintf("want condition %s=%s", want.typ, want.status)
			return ur, false, nil
		}
	}
	return ur, true, nil
}

// condition is one status condition of an object.
type condition struct{ typ, status, reason, message string }

// String is "Type=Status (Reason: message)".
func (c condition) String(typ string) string {
	if c.status == "" {
		return typ + " not reported"
	}
	s := typ + "=" + c.status
	switch {
	case c.reason != "" && c.message != "":
		s += " (" + c.reason + ": " + c.message + ")"
	case c.reason != "" || c.message != "":
		s += " (" + c.reason + c.message + ")"
	}
	return s
}

type conditions map[string]condition

// strings returns the conditions sorted by type.
func (cs conditions) strings() []string {
	var out []string
	for _, t := range slices.Sorted(maps.Keys(cs)) {
		out = append(out, cs[t].String(t))
	}
	return out
}

// conditionsOf returns status.conditions of an object by type.
func conditionsOf(u *unstructured.Unstructured) conditions {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := conditions{}
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		if t := str("type"); t != "" {
			out[t] = condition{typ: t, status: str("status"), reason: str("reason"), message: str("message")}
		}
	}
	return out
}
