package streams

import (
	"context"
	"sync"
)

// FollowEach returns a Found for Discover that gives each reported workspace one goroutine (in
// wg) running follow, which returns when the relay retires the workspace's stream, so an idle
// workspace costs its consumer nothing. A report that comes while follow runs is kept: when follow
// returns, it runs once more (unless ctx is done), since the stream may have been created again.
func FollowEach(ctx context.Context, wg *sync.WaitGroup, follow func(ws string)) func(ws string) {
	var mu sync.Mutex
	reported := map[string]bool{} // by followed workspace: reported again since its last start
	return func(ws string) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := reported[ws]; ok {
			reported[ws] = true
			return
		}
		reported[ws] = false
		wg.Go(func() {
			for {
				follow(ws)
				mu.Lock()
				again := reported[ws] && ctx.Err() == nil
				if again {
					reported[ws] = false
				} else {
					delete(reported, ws)
				}
				mu.Unlock()
				if !again {
					return
				}
			}
		})
	}
}
