package session

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/voiced/voiced/wire"
)

// A client listening to a reply longer than the idle timeout is not closed for idling, whether
// the reply is in the conversation or out of band; once it is done, the idle period runs again
// and closes the conversation. On the bubble's clock: four idle periods pass while the reply is
// held without the test waiting them out, and no loaded machine can stretch them.
func TestIdleWaitsForReply(t *testing.T) {
	tests := map[string]map[string]any{
		"in the conversation": {"type": "response.create"},
		"out of band":         {"type": "response.create", "response": map[string]any{"conversation": "none"}},
	}
	for name, create := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const idle = 400 * time.Millisecond
				gate := make(chan struct{})
				s, err := New(Config{IdleTimeout: idle, Engines: Engines{Voice: fakeVoice{gate: gate}}})
				if err != nil {
					t.Fatal(err)
				}
				tr := newFakeTransport(t, Media{})
				converse(t, s, tr)
				tr.until("session.created")
				tr.event(create)
				tr.until("response.output_audio_transcript.delta")
				// Four and a half idle periods pass while the reply is held. Not a whole number of
				// them: the reply would end at the very instant the re-armed idle timer fires, and
				// that timer, already running, closes without waiting the period out (a race the
				// bubble makes exact; see the engine's idle AfterFunc).
				time.Sleep(4*idle + idle/2)
				close(gate)
				evs := tr.until("response.done")
				if d := evs[len(evs)-1]["response"].(map[string]any); d["status"] != "completed" {
					t.Fatalf("reply %v", d)
				}
				done := time.Now()
				evs = tr.until("error") // idle again once the reply is done
				if code := evs[len(evs)-1]["error"].(map[string]any)["code"]; code != wire.CodeSessionExpired {
					t.Fatalf("after the reply: %v, want %s", evs[len(evs)-1], wire.CodeSessionExpired)
				}
				if waited := time.Since(done); waited != idle {
					t.Fatalf("closed %v after the reply, want the idle period %v", waited, idle)
				}
			})
		})
	}
}
