package session

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/internal/testkit"
)

// smallBuffers makes each accepted TCP connection's send buffer small, so a client that stops
// reading blocks the server's writes after a few frames instead of after megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A client that stops reading while fewer than outQueue events wait (so no sender ever stalls)
// must still be closed: the writer's blocked write is bounded, not held for the life of the
// socket (which would keep a conversation slot forever: idle's close frame queues behind it).
func TestStuckWriterIsClosed(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Voice: fakeVoice{}}})
	hs := httptest.NewUnstartedServer(ts.http.Config.Handler)
	hs.Listener = smallBuffers{hs.Listener}
	hs.Start()
	defer hs.Close()

	dialer := &net.Dialer{}
	httpClient := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		return c, err
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/v1/voice?ticket="+ts.ticket(t),
		&websocket.DialOptions{HTTPClient: httpClient})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	c := &client{t: t, conn: conn}
	// About 60 audio deltas of 12.8 KB each: far more than the small buffers hold, far fewer than outQueue.
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": strings.Repeat("word ", 240)}}}})
	c.send(map[string]any{"type": "response.create"})
	// The client reads nothing from here on.
	ended := make(chan struct{})
	go func() { ts.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(3 * slowClientTimeout):
		conn.CloseNow() // let the conversation end so the test can
		<-ended
		t.Fatalf("a conversation whose client stopped reading was still open after %v", 3*slowClientTimeout)
	}
}
