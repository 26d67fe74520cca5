package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hopdag/hopdag/components"
)

// Inventories are ConfigMaps, one per component and instance, in the
// inventory namespace (WithInventoryNamespace):
//
//	metadata.name   hopdag.<instance>.<component>
//	labels          hopdag.io/inventory: "true", hopdag.io/instance, hopdag.io/component
//	data.version    the component version that wrote it
//	data.objects    the objects, JSON: [{"group":"apps","version":"v1","kind":"Deployment",...}]
//
// A ConfigMap rather than an ApplySet parent: prune needs the exact list of
// what was applied, and a ConfigMap holds it in one read that needs
// nothing but RBAC on ConfigMaps in one namespace; an ApplySet finds its
// members by listing every kind it names across every namespace, which
// needs cluster-wide list rights and as many requests as kinds. One object
// per component keeps each write small (about 100 bytes per object, so
// some 10,000 objects per component under the 1 MiB limit) and lets
// components run in parallel without conflicting writes.
const (
	labelInventory = "hopdag.io/inventory"
	keyObjects     = "objects"
	keyVersion     = "version"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func inventoryName(instance, component string) string {
	return "hopdag." + instance + "." + component
}

// Inventories reads the inventory ConfigMaps of instance, sorted by
// component. A missing namespace holds none.
func (a *Applier) Inventories(ctx context.Context, instance string) ([]components.Inventory, error) {
	list, err := a.dyn.Resource(configMaps).Namespace(a.cfg.invNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: labelInventory + "=true," + components.LabelInstance + "=" + instance,
	})
	if err != nil {
		return nil, fmt.Errorf("apply: list inventories of instance %s in namespace %s: %w", instance, a.cfg.invNamespace, err)
	}
	var out []components.Inventory
	for _, cm := range list.Items {
		data := map[string]string{}
		if m, ok := cm.Object["data"].(map[string]any); ok {
			for k, v := range m {
				data[k], _ = v.(string)
			}
		}
		inv := components.Inventory{Instance: instance, Component: cm.GetLabels()[components.LabelComponent], Version: data[keyVersion]}
		if err := json.Unmarshal([]byte(data[keyObjects]), &inv.Objects); err != nil {
			return nil, fmt.Errorf("apply: inventory ConfigMap %s/%s: data.%s: %w; fix or delete it (deleting forgets what the component applied, which then is never pruned)", a.cfg.invNamespace, cm.GetName(), keyObjects, err)
		}
		out = append(out, inv)
	}
	slices.SortFunc(out, func(x, y components.Inventory) int { return strings.Compare(x.Component, y.Component) })
	return out, nil
}

// SaveInventory writes the component's inventory ConfigMap with
// server-side apply (forced: the ConfigMap is hopdag's own), creating the
// inventory namespace when it is missing. Under WithDryRun it writes
// nothing.
func (a *Applier) SaveInventory(ctx context.Context, inv components.Inventory) error {
	if a.cfg.dryRun {
		return nil
	}
	objs, err := json.Marshal(inv.Objects)
	if err != nil {
		return fmt.Errorf("apply: inventory of %s: %w", inv.Component, err)
	}
	name := inventoryName(inv.Instance, inv.Component)
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": a.cfg.invNamespace, "labels": map[string]any{
			labelInventory: "true", components.LabelInstance: inv.Instance, components.LabelComponent: inv.Component,
			components.LabelManagedBy: "hopdag",
		}},
		"data": map[string]any{keyObjects: string(objs), keyVersion: inv.Version},
	}
	body, err := json.Marshal(cm)
	if err != nil {
		return fmt.Errorf("apply: inventory of %s: %w", inv.Component, err)
	}
	force := true
	patch := func() error {
		_, err := a.dyn.Resource(configMaps).Namespace(a.cfg.invNamespace).Patch(ctx, name, types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: a.cfg.fieldManager, Force: &force})
		return err
	}
	err = patch()
	if apierrors.IsNotFound(err) {
		ns := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, a.cfg.invNamespace)
		if _, nerr := a.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Patch(ctx, a.cfg.invNamespace,
			types.ApplyPatchType, []byte(ns), metav1.PatchOptions{FieldManager: a.cfg.fieldManager, Force: &force}); nerr != nil {
			return fmt.Errorf("apply: create inventory namespace %s: %w", a.cfg.invNamespace, nerr)
		}
		err = patch()
	}
	if err != nil {
		return fmt.Errorf("apply: save inventory ConfigMap %s/%s: %w", a.cfg.invNamespace, name, err)
	}
	return nil
}
