package speechdoor

import (
	"net/http"
	"sync"
	"time"

	"github.com/voiced/voiced/door"
)

// DefaultTextBudget bounds the client text the speaking doors (/v1/synthesize, /v1/speak/stream,
// /v1/audio/speech) hold on the node at once, when Config.TextBudget is 0. One door may hold up to
// ~8 MiB of text (a 4 MiB frame or body and its string copy, or a speak stream's queued pieces and
// splitter buffer): with DefaultMaxSessions (128) sockets that was ~1 GiB node-wide. 64 MiB is
// eight sockets each holding a full 4 MiB frame (or sixteen 4 MiB bodies) at once: far more text
// than one node speaks in the time a client waits for it (64 MiB of text is days of audio).
const DefaultTextBudget = 64 << 20

// ErrTextBudgetFull refuses text that would take the node past its text budget. In a socket the
// text is dropped and the socket stays open; over HTTP it is 429 with Retry-After.
var ErrTextBudgetFull = door.NewRefusal(http.StatusTooManyRequests, "text_budget_full",
	"this node holds as much text to speak as it takes at once; this text was not taken, retry it shortly").WithRetryAfter(time.Second)

// textBudget is the node's byte budget of client text held by the speaking doors. Each holder
// gives back exactly what it took.
type textBudget struct {
	limit int64
	mu    sync.Mutex
	held  int64
}

// take takes n bytes; false (nothing taken) when they do not fit.
func (b *textBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.limit {
		return false
	}
	b.held += n
	return true
}

// force takes n bytes even past the limit: text already held and accounted elsewhere that moved
// (a speak stream's pieces may be a few bytes longer than the text that made them).
func (b *textBudget) force(n int64) {
	b.mu.Lock()
	b.held += n
	b.mu.Unlock()
}

func (b *textBudget) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// Held reports the bytes of client text the speaking doors hold now.
func (b *textBudget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}
