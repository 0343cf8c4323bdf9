package rtc

import (
	"context"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
)

// TestCallPauseHoldsAndResumes: Pause stops the reply on the track at once — the silence tail
// follows what was played, then nothing — and keeps the position and the queue: no
// output_audio_buffer report, Played stands still; Resume plays the rest, so the client gets
// every packet of the reply exactly once: the tone before the pause, the tail, the tone after.
func TestCallPauseHoldsAndResumes(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, o, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()
	reply := tone(3 * OutputRate / 2)
	if err := call.Play(context.Background(), reply); err != nil {
		t.Fatal(err)
	}
	if !<-o.output {
		t.Fatal("no started")
	}
	waitFor(t, func() bool { return call.Played() >= 10*outFrame })
	call.Pause()
	if !call.Paused() {
		t.Fatal("Paused is false after Pause")
	}
	// The pacer takes at most the tick in flight after Pause; then the tail goes out.
	var before int
	waitFor(t, func() bool {
		before = int(call.Played() / outFrame)
		cl.mu.Lock()
		defer cl.mu.Unlock()
		return len(cl.rx) >= before+CutTailPackets
	})
	held := call.Played()
	time.Sleep(300 * time.Millisecond) // 15 pacer ticks while paused; no assertion on time
	if p := call.Played(); p != held {
		t.Fatalf("played grew while paused: %d -> %d", held, p)
	}
	cl.mu.Lock()
	gotPaused := len(cl.rx)
	cl.mu.Unlock()
	if gotPaused != before+CutTailPackets {
		t.Fatalf("client got %d packets while paused, want the %d played and the %d of the tail", gotPaused, before, CutTailPackets)
	}
	select {
	case s := <-o.output:
		t.Fatalf("output report %v on a pause (the buffer is held, not drained)", s)
	default:
	}
	if call.Buffered() != len(reply)-int(held) {
		t.Fatalf("queue %d after the pause, want the %d not played", call.Buffered(), len(reply)-int(held))
	}
	call.Resume()
	if s := <-o.output; s {
		t.Fatal("second report is not stopped")
	}
	if p := call.Played(); p != int64(len(reply)) {
		t.Fatalf("played %d after resume, want the whole reply %d", p, len(reply))
	}
	want := len(reply)/outFrame + CutTailPackets
	waitFor(t, func() bool { cl.mu.Lock(); defer cl.mu.Unlock(); return len(cl.rx) >= want })
	cl.mu.Lock()
	rx := append([]rxPacket(nil), cl.rx...)
	cl.mu.Unlock()
	if len(rx) != want {
		t.Fatalf("client got %d packets, want %d (the reply's and the pause's tail)", len(rx), want)
	}
	checkLoud(t, "before the pause", rx[:before])
	checkTail(t, "the pause", rx[before:before+CutTailPackets], lookahead(t))
	checkLoud(t, "after the resume", rx[before+CutTailPackets+1:]) // the first carries the encoder's lookahead of silence
	call.Close()
}

// TestCallClearWhilePaused: a real interruption clears a paused reply: the rest is dropped,
// Played stays where the pause held it, and Resume plays nothing of it.
func TestCallClearWhilePaused(t *testing.T) {
	testkit.CheckLeaks(t)
	ep, cl, o, call := connect(t, Config{})
	defer ep.Close()
	defer cl.close()
	reply := tone(3 * OutputRate / 2)
	if err := call.Play(context.Background(), reply); err != nil {
		t.Fatal(err)
	}
	<-o.output
	waitFor(t, func() bool { return call.Played() >= 10*outFrame })
	call.Pause()
	held := call.Played()
	time.Sleep(60 * time.Millisecond) // the tick in flight
	held2 := call.Clear()
	if held2-held > outFrame {
		t.Fatalf("Clear while paused reports %d played, paused at %d", held2, held)
	}
	call.Resume()
	if s := <-o.output; s {
		t.Fatal("no stopped after the clear")
	}
	if p := call.Played(); p != held2 || call.Buffered() != 0 {
		t.Fatalf("after clear and resume: played %d (want %d), queued %d", p, held2, call.Buffered())
	}
	call.Close()
}
