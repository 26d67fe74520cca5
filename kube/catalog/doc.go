// Package catalog loads a release.Catalog from the catalog objects of a
// namespace (hopdag.io/v1alpha1 Release, ComponentVersion, UpgradePath).
//
// Loading goes through release.Load itself: each object becomes one
// catalog document, so the validation rules and the error texts are the
// file loader's. Only the place differs: a problem names the object
// (`ComponentVersion/etcd-v3.5.21`) and the field path (`spec.version`)
// instead of file:line, and the catalog's Source fields name the objects
// the same way (Line is 0).
//
// A cluster holds no files: a ComponentVersion whose manifests name a file
// (in spec.manifests or in a lifecycle phase's manifests) loads only when
// WithManifests gives a file system to read it from; otherwise the problem
// says the file does not exist. So does a local Helm chart (spec.helm.chart
// a path, not oci:// or a repository's chart): it must be in WithManifests'
// file system, a chart directory or a .tgz archive. Inline templates need
// nothing.
//
// The objects carry every field of the catalog's documents (package
// v1alpha1 mirrors them, and its tests check it), so a catalog directory
// applied to a cluster loads back into the catalog release.LoadDir reads
// from it, gates, rollback and channels included.
//
// Objects are read in name order, so the catalog and its errors are the
// same whatever order the API server lists them in.
package catalog
