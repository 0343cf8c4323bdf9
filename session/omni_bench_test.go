package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// slowEars hears "hi" after decode: a stand-in for Whisper's final decode time.
type slowEars struct{ decode time.Duration }

func (s slowEars) Transcribe(ctx context.Context, pcm []float32) (string, error) {
	select {
	case <-time.After(s.decode):
		return "hi", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// BenchmarkOmniAnswer: input_audio_buffer.commit → the reply's first audio delta, a 1 s turn,
// Echo mind, an instant voice and a final decode of 300 ms: the mind reading the transcript
// (off) waits for the decode; an omni mind (replace) hears the audio and does not.
func BenchmarkOmniAnswer(b *testing.B) {
	for _, mode := range []MindAudio{MindAudioOff, MindAudioReplace} {
		name := string(mode)
		if name == "" {
			name = "off"
		}
		b.Run(name, func(b *testing.B) {
			ts := newTestServer(b, Config{EventRate: -1, Senses: SensesConfig{MindAudio: mode},
				Engines: Engines{Voice: fakeVoice{}, Ears: slowEars{decode: 300 * time.Millisecond}}})
			c := &client{t: b}
			conn, _, err := websocket.Dial(context.Background(), "ws"+ts.URL[4:]+"/v1/voice?ticket="+ts.ticket(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.CloseNow()
			conn.SetReadLimit(ReadLimit)
			c.conn = conn
			c.expect("session.created")
			c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
				"audio": map[string]any{"input": map[string]any{"turn_detection": nil, "transcription": map[string]any{"model": "whisper-1"}}}}})
			c.until("session.updated")
			turn := appendEvent(pcm24(1000, true))
			var first time.Duration
			for b.Loop() {
				c.send(turn)
				start := time.Now()
				c.send(map[string]any{"type": "input_audio_buffer.commit"})
				c.send(map[string]any{"type": "response.create"})
				evs := c.until("response.output_audio.delta")
				first += time.Since(start)
				evs = append(evs, c.until("response.done")...)
				// Turns a second apart, as people speak: the turn's decode is done before the
				// next (else the next reply waits on it, as it reads its transcript).
				if !strings.Contains(typesJoined(evs), "transcription.completed") {
					c.until("conversation.item.input_audio_transcription.completed")
				}
			}
			b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "ms-to-first-audio")
		})
	}
}
