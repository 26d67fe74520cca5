// Package yamldoc is the YAML engine of release's catalog loader: it
// parses files of YAML documents, fast, decodes each document strictly
// into Go values, and reports every problem with its file, line, field
// path and a fix.
//
// Parser cuts files into documents at their "---" lines and parses them
// concurrently, on a fast path for the part of YAML catalogs are written
// in (block style indented with spaces, one-line scalars and flow
// collections, literal blocks) that builds the tree yaml.v3 would, and
// with yaml.v3 for the rest and for every syntax error; it hands the
// documents out in order. Decoder fills Go values from a document's tree
// in one walk, linear in the tree: every unknown field, repeated key and
// wrong type is reported through a Reporter (Problems caps how many are
// listed), and a problem in one field never stops the others. Values of
// the types a caller names (Options.Scalars) and of struct types whose
// pointer is an encoding.TextUnmarshaler decode from a scalar. Lines finds the
// line of a field path in a document later, by parsing its text again
// only then.
//
// Hostile input costs bounded work: a document over 8 MiB, aliases that
// expand to more than 10,000 values or 1 MiB of scalars, nesting deeper
// than 10,000 levels and binary data are reported, not processed.
//
// The package knows nothing of the catalog's types: release gives it
// its types' scalars and turns its Problems into release.Problem.
package yamldoc
