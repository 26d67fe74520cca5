package store

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Remove deletes the store, if token is the current lease's: its
// records (the snapshot and journal ConfigMaps), then its head, then its
// Lease, so that nothing of it is left on the API server (a labelled
// copy an operator made stays, as a snapshot leaves it). The store is
// then one never used: the next Acquire hands out token 1, and a handle
// that acquired before is fenced by the head's UID (see the package
// documentation). A Remove that stopped partway is finished by the next
// one (Acquire, then Remove). Delete the store only when its run has
// ended for good: kube/controller removes a ClusterVersion's when the
// ClusterVersion is deleted and its run has stopped.
func (s *Store) Remove(ctx context.Context, token uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.lease(ctx)
	if err != nil {
		return err
	}
	if l == nil || !s.held(l) || num(&l.ObjectMeta, annToken) != token || token == 0 {
		return s.fenced(ctx, token)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := s.c.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{labelStore: s.name}); err != nil {
		return errorf("remove: listing the objects of %s: %w", s.path("ConfigMap", s.name), err)
	}
	del := func(o client.Object, what string) error {
		if err := s.c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return errorf("remove: %s %s: %w", what, s.path(o.GetObjectKind().GroupVersionKind().Kind, o.GetName()), err)
		}
		return nil
	}
	for _, m := range list.Items {
		if m.Name == s.name || !s.owns(m.Name) {
			continue // the head goes last; a copy someone labelled is not the store's
		}
		if err := del(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: m.Name}}, "deleting"); err != nil {
			return err
		}
	}
	if err := del(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name}}, "deleting the head"); err != nil {
		return err
	}
	// Conditioned on the Lease as read: one taken over since (it expired)
	// is its new holder's.
	pre := metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}
	if err := s.c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name}}, &client.DeleteOptions{Preconditions: &pre}); err != nil && !apierrors.IsNotFound(err) {
		return errorf("remove: deleting %s: %w", s.path("Lease", s.name), err)
	}
	s.v = view{}
	return nil
}
