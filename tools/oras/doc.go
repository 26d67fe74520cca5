// Module oras builds the oras CLI (oras.land/oras/cmd/oras) from the Go
// module proxy, the baseline of the bundle package's x-oras benchmark; see
// ../env.sh. It has its own go.mod so that its dependencies and cache key
// are separate.
package oras
