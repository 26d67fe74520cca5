// Module ko builds ko (github.com/google/ko) from the Go module proxy: it
// builds kube/examples/operator's container image without Docker and
// pushes it to the registry the tests run; see ../env.sh. It has its own
// go.mod so that its dependencies and cache key are separate.
package ko
