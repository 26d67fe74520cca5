package yamldoc

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestChunked(t *testing.T) {
	tests := []struct {
		name    string
		reserve int
		n       int
	}{
		{"empty", 0, 0},
		{"reserved right", 10, 10},
		{"reserved too few", 3, chunkSize + 5},
		{"not reserved", 0, 2*chunkSize + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Chunked[int]
			c.Reserve(tt.reserve)
			for i := range tt.n + 1 {
				*c.Next() = i
			}
			c.Undo() // the last one
			all := c.All()
			assert.Len(t, all, tt.n, "All() after %d values", tt.n)
			for i, v := range all {
				if v != i {
					t.Fatalf("All()[%d] = %d, want %d", i, v, i)
				}
			}
			c.Filter(func(v *int) bool { return *v%2 == 0 })
			evens := c.All()
			assert.True(t, slices.IsSorted(evens), "Filter keeps the order")
			assert.Len(t, evens, (tt.n+1)/2, "even values kept")
		})
	}
}
