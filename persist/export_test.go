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

// AheadStats is how many group requests sent statements ahead, how many of them left that path
// and were run again, and how many were sent in one round trip with others.
func AheadStats(s *Store) (sent, missed, together int64) {
	return s.aheadSent.Load(), s.aheadMissed.Load(), s.aheadTogether.Load()
}
