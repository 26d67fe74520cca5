package path

import "github.com/hopdag/hopdag/release"

// ResolveAcross is Resolve through the search across tracks even for one
// track, so that tests hold that search to the one-track one.
func ResolveAcross(c *release.Catalog, current, target State, opts ...Option) (*Route, error) {
	if err := noTrackOption(opts); err != nil {
		return nil, err
	}
	current, target, err := states(c, current, target)
	if err != nil {
		return nil, err
	}
	r, _, err := resolveAcross(c, current, target, opts)
	return r, err
}
