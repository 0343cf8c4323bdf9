package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// BenchmarkSpeculationAnswer measures what speculation hides: spoken turns paced in real time
// (20 ms appends: 600 ms of speech, then silence) under semantic_vad (turn.Semantic on an
// energy prober), a transcriber whose partial and final read the same finished sentence at once,
// a chat-completions mind (mind.OpenAI over loopback HTTP) whose first token comes after
// 300 ms, and a voice that answers at once; then a 100 ms mind and a voice that takes 150 ms per
// piece: a speculation synthesizes the first sentence while the turn is held, so a mind quicker
// than the turn wait hides the synthesis too (answer ≈ max(turn wait, first quiet window + mind +
// voice) rather than max(turn wait, first quiet window + mind) + voice). answer-p50-ms is the end of speech (the last loud append
// sent) → the first audio delta, per turn; b.N is turns.
//
//	go test -run '^$' -bench SpeculationAnswer -benchtime 12x ./session
func BenchmarkSpeculationAnswer(b *testing.B) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		mindDelay, voiceDelay time.Duration
		speculate             bool
	}{{300 * ms, 0, false}, {300 * ms, 0, true}, {100 * ms, 150 * ms, false}, {100 * ms, 150 * ms, true}} {
		speculate, mindDelay := tc.speculate, tc.mindDelay
		b.Run(fmt.Sprintf("mind=%v/voice=%v/speculate=%v", mindDelay, tc.voiceDelay, speculate), func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(mindDelay):
				case <-r.Context().Done():
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				c, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": "It is noon."}}}})
				fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", c)
			}))
			defer srv.Close()
			m, err := mind.NewOpenAI(mind.OpenAIConfig{URL: srv.URL + "/v1", Model: "fake"})
			if err != nil {
				b.Fatal(err)
			}
			s, err := New(Config{Speculate: speculate, Engines: Engines{Ears: fakeEars{"What time is it?"}, Voice: slowVoice{tc.voiceDelay},
				Mind: m, NewTurnDetector: TurnDetectors(energySpeech)}})
			if err != nil {
				b.Fatal(err)
			}
			tr := newFakeTransport(b, Media{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.Converse(context.Background(), tr, Grant{Principal: Principal{Subject: "bench"}}, wire.GA, "m")
			}()
			defer func() { close(tr.in); <-done }()
			tr.until("session.created")
			tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
				"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "semantic_vad"}}}}})
			tr.until("session.updated")

			loud, quiet := appendEvent(pcm24(20, true)), appendEvent(pcm24(20, false))
			clock, sent := time.Now(), 0
			pace := func(ev map[string]any) {
				time.Sleep(time.Until(clock.Add(time.Duration(sent) * 20 * time.Millisecond)))
				tr.event(ev)
				sent++
			}
			// firstAfter is when the first event of type typ at or after index from was sent.
			firstAfter := func(from int, typ string) (time.Time, int, bool) {
				tr.mu.Lock()
				defer tr.mu.Unlock()
				for i := from; i < len(tr.events); i++ {
					if tr.events[i]["type"] == typ {
						return tr.times[i], i, true
					}
				}
				return time.Time{}, 0, false
			}
			var answers []float64
			b.ResetTimer()
			for range b.N {
				tr.mu.Lock()
				from := len(tr.events)
				tr.mu.Unlock()
				for range 30 {
					pace(loud)
				}
				stop := time.Now()
				var answered bool
				for k := 0; k < 500; k++ { // 10 s of silence at most
					pace(quiet)
					if !answered {
						if at, _, ok := firstAfter(from, "response.output_audio.delta"); ok {
							answers = append(answers, float64(at.Sub(stop).Microseconds())/1000)
							answered = true
						}
					}
					if _, _, ok := firstAfter(from, "response.done"); ok && answered {
						break
					}
				}
				for range 10 { // a gap before the next turn
					pace(quiet)
				}
			}
			b.StopTimer()
			if len(answers) == 0 {
				b.Fatal("no turn answered")
			}
			slices.Sort(answers)
			b.ReportMetric(answers[len(answers)/2], "answer-p50-ms")
			b.ReportMetric(answers[len(answers)-1], "answer-max-ms")
			b.ReportMetric(float64(len(answers)), "answered")
		})
	}
}
