package door

import (
	"context"
	"sync"
)

// WatchDrain is a socket's drain watcher: on a goroutine of its own it calls onDrain once
// draining is closed (Sockets.Draining: shutdown began), unless ctx ends or stop is called first.
// onDrain is the door's way to finish (close with StatusGoingAway once the turn in flight is
// done). stop keeps onDrain from starting and waits for it if it has started; the socket's owner
// calls it before it returns (more calls do nothing). A nil draining never fires.
func WatchDrain(ctx context.Context, draining <-chan struct{}, onDrain func()) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-draining:
		case <-quit:
			return
		case <-ctx.Done():
			return
		}
		select { // stop was called as draining began: stop wins
		case <-quit:
			return
		default:
		}
		onDrain()
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}
