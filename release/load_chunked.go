package release

// chunkSize is the number of values per chunk of a chunked.
const chunkSize = 1024

// chunked collects values in fixed-size chunks, so that adding one never
// copies the others; all returns them in one exact-size slice.
type chunked[T any] struct {
	chunks [][]T
}

// next returns a pointer to a new zero value at the end.
func (c *chunked[T]) next() *T {
	if n := len(c.chunks); n == 0 || len(c.chunks[n-1]) == chunkSize {
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
	if n == 0 {
		return nil
	}
	out := make([]T, 0, n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}
