package rtc

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// TestCallEventMessageSize: the answer advertises the message size the call takes
// (a=max-message-size, MaxEventMessage), not pion's 1 GiB default; a peer that ignores it and
// sends a larger message has it dropped and reported (Handlers.TooLarge: an error event on the
// transport), and the channel goes on carrying events both ways.
func TestCallEventMessageSize(t *testing.T) {
	testkit.CheckLeaks(t)
	events := make(chan []byte, 4)
	tooLarge := make(chan int, 4)
	h := Handlers{Event: func(m []byte) { events <- m }, TooLarge: func(n int) { tooLarge <- n }}
	var advertised string
	ignoreLimit := func(answer string) string { // the peer believes it may send 1 GiB
		for _, l := range strings.Split(answer, "\r\n") {
			if v, ok := strings.CutPrefix(l, "a=max-message-size:"); ok {
				advertised = v
			}
		}
		return strings.ReplaceAll(answer, "a=max-message-size:"+advertised, "a=max-message-size:1073741823")
	}
	ep, cl, call := connectWith(t, Config{}, h, ignoreLimit)
	defer ep.Close()
	defer cl.close()
	if want := fmt.Sprint(MaxEventMessage); advertised != want {
		t.Errorf("the answer advertises a=max-message-size:%s, want %s", advertised, want)
	}
	next := func(what string) []byte {
		t.Helper()
		select {
		case m := <-events:
			return m
		case n := <-tooLarge:
			t.Fatalf("%s: refused as too large (%d bytes)", what, n)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing arrived", what)
		}
		return nil
	}
	big := bytes.Repeat([]byte("x"), MaxEventMessage) // exactly the bound: taken
	if err := cl.dc.Send(big); err != nil {
		t.Fatal(err)
	}
	if m := next("a message of MaxEventMessage bytes"); !bytes.Equal(m, big) {
		t.Errorf("a message of MaxEventMessage bytes arrived as %d bytes", len(m))
	}
	over := MaxEventMessage + 40<<10
	if err := cl.dc.Send(bytes.Repeat([]byte("y"), over)); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-tooLarge:
		if n != over {
			t.Errorf("TooLarge(%d), want %d", n, over)
		}
	case m := <-events:
		t.Errorf("a %d-byte message was delivered (%d bytes), want it refused", over, len(m))
	case <-time.After(10 * time.Second):
		t.Fatal("the over-size message was neither refused nor delivered")
	}
	if err := cl.dc.SendText(`{"type":"session.update"}`); err != nil {
		t.Fatal(err)
	}
	if m := next("the event after"); string(m) != `{"type":"session.update"}` {
		t.Errorf("the event after the refused one: %q", m)
	}
	if err := call.Send([]byte(`{"type":"error"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-cl.msgs:
		if string(m) != `{"type":"error"}` {
			t.Errorf("server event: %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no server event after the refused message")
	}
	call.Close()
}

// TestCallOtherDataChannelsClosed: a channel other than the first oai-events (another label, a
// second oai-events) is closed by the call at once, so it holds no reader or buffer there; the
// oai-events channel goes on.
func TestCallOtherDataChannelsClosed(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, o, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()
	for _, label := range []string{"other", "oai-events"} {
		dc, err := cl.pc.CreateDataChannel(label, nil)
		if err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		dc.OnClose(func() { close(closed) })
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("a second channel %q was not closed by the call", label)
		}
	}
	if err := cl.dc.SendText("still here"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-o.events:
		if string(m) != "still here" {
			t.Errorf("got %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the oai-events channel stopped")
	}
	call.Close()
}

// TestCallEndsWhenEventsChannelCloses: a peer that closes its oai-events channel has ended the
// call (nothing can reach it): the call ends at once, not when ICE times out.
func TestCallEndsWhenEventsChannelCloses(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, o, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()
	cl.dc.Close()
	select {
	case <-call.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the call went on 5 s after its oai-events channel closed")
	}
	if err := <-o.closed; !errors.Is(err, ErrICEFailed) {
		t.Errorf("Closed: %v, want ErrICEFailed", err)
	}
}
