package store_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hopdag/hopdag/kube/store"
)

// TestNewRefusesInvalidNames: a name that cannot be the store's label
// value and the start of its objects' names is refused by New, saying
// why, not by the API server at the first write (where a controller
// showed "must be no more than 63 bytes" and then waited for a lock its
// own failed Acquire held).
func TestNewRefusesInvalidNames(t *testing.T) {
	tests := []struct {
		name, namespace, store string
		want                   string // "" when New accepts it
	}{
		{name: "63 characters", namespace: "ns", store: "hopdag-" + strings.Repeat("a", 56)},
		{name: "64 characters", namespace: "ns", store: "hopdag-" + strings.Repeat("a", 57), want: "must be no more than 63 bytes"},
		{name: "a dot", namespace: "ns", store: "hopdag-cluster.example"},
		{name: "an underscore", namespace: "ns", store: "hopdag_cluster", want: "must consist of lower case alphanumeric characters, '-' or '.'"},
		{name: "upper case", namespace: "ns", store: "Run", want: "must consist of lower case"},
		{name: "empty", namespace: "ns", store: "", want: `name "" cannot name a store`},
		{name: "bad namespace", namespace: "No_NS", store: "run", want: `namespace "No_NS" of store run`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := store.New(nil, tt.namespace, tt.store)
			if tt.want == "" {
				assert.NoError(t, err, "New(%q, %q)", tt.namespace, tt.store)
				assert.NotNil(t, s, "New(%q, %q)", tt.namespace, tt.store)
				return
			}
			assert.ErrorContains(t, err, tt.want, "New(%q, %q)", tt.namespace, tt.store)
			assert.Nil(t, s, "New(%q, %q) with an error", tt.namespace, tt.store)
		})
	}
}
