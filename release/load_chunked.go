package release

import "slices"

// chunkSize is the number of values per chunk of a chunked, past the first.
const chunkSize = 1024

// chunked collects values in chunks, so that adding one never copies the
// others; all returns them in one slice. When reserve guessed the number
// right, the values are in one chunk and all returns it without a copy.
type chunked[T any] struct {
	chunks [][]T
}

// reserve makes the first chunk hold n values; call it before next.
func (c *chunked[T]) reserve(n int) {
	if n > 0 && len(c.chunks) == 0 {
		c.chunks = [][]T{make([]T, 0, n)}
	}
}

// next returns a pointer to a new zero value at the end.
func (c *chunked[T]) next() *T {
	if n := len(c.chunks); n == 0 || len(c.chunks[n-1]) == cap(c.chunks[n-1]) {
		c.chunks = append(c.chunks, make([]T, 0, chunkSize))
	}
	last := &c.chunks[len(c.chunks)-1]
	var zero T
	*last = append(*last, zero)
	return &(*last)[len(*last)-1]
}

// undo removes the value next returned last.
func (c *chunked[T]) undo() {
	last := &c.chunks[len(c.chunks)-1]
	var zero T
	(*last)[len(*last)-1] = zero // drop what it points to
	*last = (*last)[:len(*last)-1]
}

// filter keeps the values keep reports true for, in order.
func (c *chunked[T]) filter(keep func(*T) bool) {
	var out chunked[T]
	for _, ch := range c.chunks {
		for i := range ch {
			if keep(&ch[i]) {
				*out.next() = ch[i]
			}
		}
	}
	*c = out
}

// all returns the values in order (nil when there are none).
func (c *chunked[T]) all() []T {
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
