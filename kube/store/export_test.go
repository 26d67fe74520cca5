package store

// Written is the status bytes s wrote.
func Written(s *Store) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}
