package persist

// BatchPending is how many requests wait in key's group-commit queue, for tests that need a
// group to form deterministically.
func BatchPending(s *Store, key string) int {
	s.batches.mu.Lock()
	defer s.batches.mu.Unlock()
	if q := s.batches.queues[key]; q != nil {
		return len(q.pending)
	}
	return 0
}
