package rtc

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/internal/testkit"
)

// Server events go out as text messages, as OpenAI's do: browser SDKs parse event.data as a
// string, and the OpenAI Agents SDK silently drops a binary (ArrayBuffer) message.
func TestCallEventsAreTextMessages(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, _, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()
	got := make(chan webrtc.DataChannelMessage, 1)
	cl.dc.OnMessage(func(m webrtc.DataChannelMessage) {
		select {
		case got <- m:
		default:
		}
	})
	if err := call.Send([]byte(`{"type":"session.created"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if !m.IsString || string(m.Data) != `{"type":"session.created"}` {
			t.Fatalf("event out: %q, text %v: want the JSON as a text message", m.Data, m.IsString)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event reached the client")
	}
	call.Close()
}
