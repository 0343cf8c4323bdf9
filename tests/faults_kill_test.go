package tests

import (
	"encoding/base64"
	"math"
	"testing"
	"time"
)

// audioSeconds is the seconds of 24 kHz PCM16 reply audio an event carries (0 for other events).
func audioSeconds(ev rtEvent) float64 {
	if ev.Type != "response.audio.delta" && ev.Type != "response.output_audio.delta" {
		return 0
	}
	b, _ := base64.StdEncoding.DecodeString(ev.str("delta"))
	return float64(len(b)/2) / 24000
}

// TestFaultsKill9UnderLoad: several metered conversations run at once: real speech streamed at
// the speaker's pace, then a long spoken reply each; the process is SIGKILLed while the replies
// stream. After a restart on the same meter store, /v1/usage summed over the principals is
// within one second of what was served: the speech the server hears of what was sent (measured
// on the restarted server) plus the reply audio the clients received up to the kill.
func TestFaultsKill9UnderLoad(t *testing.T) {
	checkLeaks(t)
	const conversations = 3
	s := startRealtime(t, serverOpts{})
	speech := sileroSpeech(t, "samples.pcm")
	users := make([]string, conversations)
	conns := make([]*rtConn, conversations)
	for i := range conns {
		users[i] = "kill-" + randHex(4)
		conns[i] = s.dialRealtime(t, s.mintBeta(t, s.jwt(users[i], "")), true)
		conns[i].until("session.created", nil)
		conns[i].send(betaSessionUpdate(nil))
		conns[i].until("session.updated", nil)
	}
	// Every speaker talks at once, at real time (pacing, not synchronisation).
	for at := 0; at < len(speech); at += 2400 {
		for _, c := range conns {
			c.appendAudio(speech[at:min(at+2400, len(speech))])
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range conns {
		c.send(textItem(longText(40)))
		c.send(map[string]any{"type": "response.create"})
	}
	// Kill once every reply is streaming (each client has heard a second of it), none finished.
	received := make([]float64, conversations)
	done := make([]bool, conversations)
	deadline := time.Now().Add(60 * time.Second)
	for streaming := 0; streaming < conversations; {
		if time.Now().After(deadline) {
			t.Fatalf("the replies did not all start streaming in 60 s: received %v", received)
		}
		streaming = 0
		for i, c := range conns {
			select {
			case ev := <-c.events:
				received[i] += audioSeconds(ev)
				if ev.Type == "error" {
					t.Fatalf("conversation %d: %s", i, ev.Raw)
				}
				done[i] = done[i] || ev.Type == "response.done"
			case <-time.After(time.Millisecond):
			}
			if received[i] >= 1 {
				streaming++
			}
		}
	}
	s.kill9()
	for i, c := range conns { // what reached the client before the socket died is served too
		for ev := range c.events {
			received[i] += audioSeconds(ev)
			done[i] = done[i] || ev.Type == "response.done"
		}
	}
	for i := range done {
		if done[i] {
			t.Logf("conversation %d's reply finished before the kill (a longer reply would test more)", i)
		}
	}

	s2 := startRealtime(t, serverOpts{DataDir: s.DataDir})
	// What the server hears of this speech, on the restarted server (another principal).
	ref := s2.dialRealtime(t, s2.mintBeta(t, s2.jwt("ref-"+randHex(4), "")), true)
	ref.until("session.created", nil)
	ref.send(betaSessionUpdate(nil))
	ref.until("session.updated", nil)
	for at := 0; at < len(speech); at += 2400 {
		ref.appendAudio(speech[at:min(at+2400, len(speech))])
	}
	ref.send(map[string]any{"type": "input_audio_buffer.commit"})
	ref.until("conversation.item.created", nil)
	ref.send(map[string]any{"type": "response.create"})
	evs := ref.until("response.done", nil)
	refHeard, _ := responseUsage(evs[len(evs)-1])
	ref.close()
	if refHeard <= 1 {
		t.Fatalf("the server reports hearing %.2f s of %.2f s of real speech", refHeard, float64(len(speech))/24000)
	}

	var served, metered float64
	for i, u := range users {
		heard, spoken := s2.usageOf(t, u)
		t.Logf("conversation %d: heard %.3f s metered / %.3f s served; spoken %.3f s metered / %.3f s received",
			i, heard, refHeard, spoken, received[i])
		served += refHeard + received[i]
		metered += heard + spoken
	}
	t.Logf("all %d conversations: %.3f s metered after kill -9 and restart, %.3f s served (difference %+.3f s)",
		conversations, metered, served, metered-served)
	if math.Abs(metered-served) > 1 {
		t.Errorf("usage after kill -9: %.3f s, served %.3f s: off by %.3f s, want within 1 s", metered, served, metered-served)
	}
	s2.stop()
}
