// Module registry builds the CNCF distribution registry
// (github.com/distribution/distribution/v3/cmd/registry) from the Go module
// proxy for the bundle package's integration tests; see ../env.sh. It has
// its own go.mod so that its dependencies and cache key are separate.
package registry
