package session

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/voiced/voiced/wire"
)

// stuckReader is a transport whose client stops reading at the first conversation.item.retrieved
// until released.
type stuckReader struct {
	*fakeTransport
	release chan struct{}
}

func (s stuckReader) Send(ctx context.Context, event []byte) error {
	if bytes.Contains(event, []byte(`"conversation.item.retrieved"`)) {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.fakeTransport.Send(ctx, event)
}

// TestRetrieveWaitsForTheWriter: conversation.item.retrieved carries an item's audio (here 1 MiB;
// up to the conversation's 32 MiB); a client asking for it faster than it reads must not fill the
// writer's queue with copies (outQueue of them: 256 x 1.3 MiB of base64 here, GBs with larger
// items). The input goroutine waits for each retrieved event to be written, so while the client
// reads nothing at most two more retrieves are taken in. Before, all 100 were.
func TestRetrieveWaitsForTheWriter(t *testing.T) {
	leakCheck(t)
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr := stuckReader{fakeTransport: newFakeTransport(t, Media{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Converse(context.Background(), tr, Grant{Principal: Principal{Subject: "retrieve-test"}}, wire.GA, "m")
	}()
	defer func() {
		close(tr.release)
		close(tr.in)
		<-done
	}()
	tr.until("session.created")
	tr.event(map[string]any{"type": "conversation.item.create", "item": map[string]any{"id": "item_a", "type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_audio", "transcript": "hi", "audio": base64.StdEncoding.EncodeToString(make([]byte, 1<<20))}}}})
	tr.until("conversation.item.done")
	taken := 0
	for i := range 100 {
		b, _ := json.Marshal(map[string]any{"type": "conversation.item.retrieve", "event_id": fmt.Sprint("evt_", i), "item_id": "item_a"})
		select {
		case tr.in <- Inbound{Event: b}:
			taken++
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	t.Logf("%d of 100 retrieves taken in while the client read nothing", taken)
	if taken > 3 {
		t.Errorf("%d retrieves taken in while the client read nothing: their 1 MiB events wait in the queue; want at most 3", taken)
	}
}
