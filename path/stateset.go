package path

// stateSet maps packed states to their ids: open addressing with linear
// probing (a Go map spends most of a multi-track search hashing).
type stateSet struct {
	keys  []uint64
	vals  []int32 // -1: empty
	n     int
	shift uint
}

func (s *stateSet) init(capacity int) {
	size, shift := 16, uint(60)
	for size < 2*capacity {
		size, shift = size*2, shift-1
	}
	s.keys, s.vals, s.n, s.shift = make([]uint64, size), make([]int32, size), 0, shift
	for i := range s.vals {
		s.vals[i] = -1
	}
}

func (s *stateSet) slot(k uint64) int { return int((k * 0x9e3779b97f4a7c15) >> s.shift) }

// get returns the id of k.
func (s *stateSet) get(k uint64) (int32, bool) {
	mask := len(s.keys) - 1
	for i := s.slot(k); ; i = (i + 1) & mask {
		switch v := s.vals[i]; {
		case v < 0:
			return 0, false
		case s.keys[i] == k:
			return v, true
		}
	}
}

// add records k with id v unless present; it reports whether it added it.
func (s *stateSet) add(k uint64, v int32) bool {
	if 2*(s.n+1) > len(s.keys) {
		s.grow()
	}
	mask := len(s.keys) - 1
	for i := s.slot(k); ; i = (i + 1) & mask {
		switch {
		case s.vals[i] < 0:
			s.keys[i], s.vals[i] = k, v
			s.n++
			return true
		case s.keys[i] == k:
			return false
		}
	}
}

func (s *stateSet) grow() {
	keys, vals := s.keys, s.vals
	s.init(len(keys))
	for i, v := range vals {
		if v >= 0 {
			s.add(keys[i], v)
		}
	}
}
