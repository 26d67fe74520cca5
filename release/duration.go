package release

import (
	"encoding/json"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as Go writes durations ("90s", "5m",
// "1h30m") in YAML and JSON. The zero Duration means "not set": the package
// that uses the field documents its default.
type Duration struct {
	time.Duration
}

// D is a shorthand for Duration{d}.
func D(d time.Duration) Duration { return Duration{d} }

// ParseDuration parses s with time.ParseDuration and refuses negative values.
func ParseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf("release: invalid duration %s: write a number with a unit, e.g. 90s, 5m, 1h30m", quote(s))
	}
	if d < 0 {
		return Duration{}, fmt.Errorf("release: invalid duration %s: must not be negative", quote(s))
	}
	return Duration{d}, nil
}

// String is the Go spelling ("1m30s"), or "0s".
func (d Duration) String() string { return d.Duration.String() }

// MarshalText writes the Go spelling.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// UnmarshalText parses a duration.
func (d *Duration) UnmarshalText(b []byte) error {
	p, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// MarshalJSON writes a JSON string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON reads a JSON string such as "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("release: duration must be a JSON string such as \"90s\": %w", err)
	}
	return d.UnmarshalText([]byte(s))
}

// MarshalYAML writes the Go spelling.
func (d Duration) MarshalYAML() (any, error) { return d.Duration.String(), nil }

// UnmarshalYAML reads a scalar such as 90s.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: release: duration must be a scalar such as 90s", n.Line)
	}
	return d.UnmarshalText([]byte(n.Value))
}
