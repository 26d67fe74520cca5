package yamldoc

import "slices"

// chunkSize is the number of values per chunk of a Chunked, past the first.
const chunkSize = 1024

// Chunked collects values in chunks, so that adding one never copies the
// others; All returns them in one slice. When Reserve guessed the number
// right, the values are in one chunk and All returns it without a copy.
type Chunked[T any] struct {
	chunks [][]T
}

// Reserve makes the first chunk hold n values; call it before Next.
func (c *Chunked[T]) Reserve(n int) {
	if n > 0 && len(c.chunks) == 0 {
		c.chunks = [][]T{make([]T, 0, n)}
	}
}

// Next returns a pointer to a new zero value at the end.
func (c *Chunked[T]) Next() *T {
	if n := len(c.chunks); n == 0 || len(c.chunks[n-1]) == cap(c.chunks[n-1]) {
		c.chunks = append(c.chunks, make([]T, 0, chunkSize))
	}
	last := &c.chunks[len(c.chunks)-1]
	var zero T
	*last = append(*last, zero)
	return &(*last)[len(*last)-1]
}

// Undo removes the value Next returned last.
func (c *Chunked[T]) Undo() {
	last := &c.chunks[len(c.chunks)-1]
	var zero T
	(*last)[len(*last)-1] = zero // drop what it points to
	*last = (*last)[:len(*last)-1]
}

// Filter keeps the values keep reports true for, in order.
func (c *Chunked[T]) Filter(keep func(*T) bool) {
	var out Chunked[T]
	for _, ch := range c.chunks {
		for i := range ch {
			if keep(&ch[i]) {
				*out.Next() = ch[i]
			}
		}
	}
	*c = out
}

// All returns the values in order (nil when there are none).
func (c *Chunked[T]) All() []T {
	n := 0
	for _, ch := range c.chunks {
		n += len(ch)
	}
	switch {
	case n == 0:
		return nil
	case len(c.chunks[0]) == n:
		return slices.Clip(c.chunks[0])
	}
	out := make([]T, 0, n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}
