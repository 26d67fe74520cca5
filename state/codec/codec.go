package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hopdag/hopdag/record"
)

// Marshal encodes s as indented JSON ending in a newline: readable with
// cat and jq.
func Marshal(s *record.Status) ([]byte, error) {
	if s == nil {
		return nil, errors.New("nil status")
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Unmarshal decodes a status written by Marshal. It fails on anything
// else: empty or truncated input, trailing bytes, a JSON value that is not
// a status (no valid phase on the run, a hop or a component).
func Unmarshal(data []byte) (*record.Status, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty record")
	}
	s := new(record.Status)
	if err := json.Unmarshal(data, s); err != nil {
		return nil, err
	}
	if err := validate(s); err != nil {
		return nil, err
	}
	return s, nil
}

// ErrInvalid is matched by the errors of Commits and Snapshot for a
// status that a reader would refuse (see Unmarshal): nothing is encoded,
// so that a writer never stores what no Load can read back.
var ErrInvalid = errors.New("a status that could not be loaded back")

func validate(s *record.Status) error {
	if err := validateHeaders(s); err != nil {
		return err
	}
	for i, h := range s.Hops {
		for _, c := range h.Components {
			if err := validateComponent(i, &c); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateHeaders checks the phases of the run and of its hops.
func validateHeaders(s *record.Status) error {
	if !valid(s.Phase) {
		return fmt.Errorf("run phase %q is not a phase", s.Phase)
	}
	for i, h := range s.Hops {
		if !valid(h.Phase) {
			return fmt.Errorf("hop %d phase %q is not a phase", i+1, h.Phase)
		}
	}
	return nil
}

// validateComponent checks component c of hop (from 0).
func validateComponent(hop int, c *record.ComponentStatus) error {
	if c.Name == "" {
		return fmt.Errorf("hop %d has a component without a name", hop+1)
	}
	if !valid(c.Phase) {
		return fmt.Errorf("hop %d component %s phase %q is not a phase", hop+1, c.Name, c.Phase)
	}
	return nil
}

func valid(p record.Phase) bool {
	return slices.Contains(record.Phases(), p)
}
