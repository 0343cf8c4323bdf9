package tests

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openairt "github.com/WqyJh/go-openai-realtime"
	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// startRealtime is a mounted server whose conversation component is registered (it owns
// --jwt-secret-file); the test skips until it is.
func startRealtime(t *testing.T, o serverOpts) *server {
	t.Helper()
	return startServer(t, o)
}

// TestRealtimeStrictBeta drives a beta conversation through a raw socket that holds every rule
// @openai/realtime-api-beta enforces: a text turn, a manual audio turn and a server_vad turn, all
// with real speech.
func TestRealtimeStrictBeta(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt("strict-user", "acme")), true)
	speech := sileroSpeech(t, "samples.pcm")

	first, _ := c.next(30 * time.Second)
	if first.Type != "session.created" {
		t.Fatalf("first event %q, want session.created", first.Type)
	}
	c.send(betaSessionUpdate(nil)) // the client's first words: turn_detection null
	c.until("session.updated", nil)

	t.Run("text turn", func(t *testing.T) {
		c.send(textItem("Hello there."))
		c.until("conversation.item.created", nil)
		c.send(map[string]any{"type": "response.create"})
		evs := c.until("response.done", nil)
		if st := evs[len(evs)-1].str("response", "status"); st != "completed" {
			t.Fatalf("response.done status %q: %s", st, evs[len(evs)-1].Raw)
		}
		if tr := replyTranscript(evs); !strings.Contains(tr, "Hello there") {
			t.Errorf("echo reply transcript %q does not carry the question", tr)
		}
		if len(replyAudio(t, evs)) == 0 {
			t.Errorf("text turn with audio modality: no audio deltas (%v)", types(evs))
		}
	})

	t.Run("manual audio turn", func(t *testing.T) {
		c.appendAudio(speech)
		c.send(map[string]any{"type": "input_audio_buffer.commit"})
		evs := c.until("conversation.item.created", nil)
		item := evs[len(evs)-1]
		if item.str("item", "role") != "user" {
			t.Fatalf("committed item %s, want a user item", item.Raw)
		}
		c.send(map[string]any{"type": "response.create"})
		evs = c.until("response.done", nil)
		if st := evs[len(evs)-1].str("response", "status"); st != "completed" {
			t.Fatalf("response.done status %q", st)
		}
		if len(replyAudio(t, evs)) == 0 {
			t.Errorf("no reply audio: %v", types(evs))
		}
	})

	t.Run("server_vad turn", func(t *testing.T) {
		c.send(betaSessionUpdate(serverVAD()))
		c.until("session.updated", nil)
		c.appendAudio(append(append(silence24k(0.5), speech...), silence24k(1.5)...))
		evs := c.until("response.done", nil) // the first turn's; later ones may follow (pauses)
		order := []string{"input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
			"input_audio_buffer.committed", "conversation.item.created", "response.created", "response.done"}
		at := 0
		for _, e := range evs {
			if at < len(order) && e.Type == order[at] {
				at++
			}
		}
		if at != len(order) {
			t.Fatalf("server_vad turn: events %v lack %s in order", types(evs), order[at])
		}
	})
	c.checkStrict()
	c.close()
	s.stop()
}

// checkReplyAudio is the talk test's content check: the reply's first sentence, spoken by the
// fixture Kokoro, must transcribe (fixture Whisper, WS /v1/transcribe) to exactly that sentence's
// phonemes. The codec carries one contiguous synthesis call, so only the first sentence is read
// (the pause after it is end-of-text).
func checkReplyAudio(t *testing.T, s *server, transcript string, pcm24 []int16) error {
	t.Helper()
	if len(pcm24) == 0 {
		return errors.New("no reply audio: the response carried no audio deltas")
	}
	sentences := kokoro.SplitSentences(transcript)
	if len(sentences) == 0 {
		return fmt.Errorf("reply transcript %q has no sentence", transcript)
	}
	return checkReplyPCM16(t, s, sentences[0], audio.Resample(audio.Int16ToFloat32(pcm24), 24000, 16000))
}

// checkReplyPCM16 is checkReplyAudio's content check on reply audio already at 16 kHz: it must
// transcribe (fixture Whisper, WS /v1/transcribe) to exactly the phonemes of sentence.
func checkReplyPCM16(t *testing.T, s *server, sentence string, pcm16 []float32) error {
	t.Helper()
	want := expectedPhonemes(t, sentence)
	if len(pcm16) > 30*16000 {
		pcm16 = pcm16[:30*16000]
	}
	if got := strings.TrimSpace(transcribeWS(t, s, pcm16)); got != want {
		return fmt.Errorf("reply audio transcribes as %q, want the phonemes of %q: %q", got, sentence, want)
	}
	return nil
}

// TestRealtimeTalk speaks a question (espeak-ng) into a server_vad conversation and proves the
// reply audio carries the reply: its first sentence reads back, through the fixture codec, as the
// phonemes of the reply transcript's first sentence.
//
// Mutation-proven, in the test itself: the same check on the reply audio replaced by zeros fails
// with "reply audio transcribes as \";\" …" (silence reads as ';' then end-of-text), and on the
// reply audio dropped fails with "no reply audio: …" — two different failures.
func TestRealtimeTalk(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	question := espeakSpeech(t, "What is the weather like today?")
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt("talker", "")), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(serverVAD()))
	c.until("session.updated", nil)

	c.appendAudio(append(append(silence24k(0.5), question...), silence24k(1.5)...))
	evs := c.untilCompleted()
	c.checkStrict()
	transcript := replyTranscript(evs)
	pcm := replyAudio(t, evs)
	if err := checkReplyAudio(t, s, transcript, pcm); err != nil {
		t.Fatalf("talk: %v", err)
	}

	zeros := checkReplyAudio(t, s, transcript, make([]int16, len(pcm)))
	dropped := checkReplyAudio(t, s, transcript, nil)
	switch {
	case zeros == nil || !strings.HasPrefix(zeros.Error(), "reply audio transcribes as"):
		t.Errorf("mutation (reply audio → zeros) must fail the content check, got %v", zeros)
	case dropped == nil || !strings.HasPrefix(dropped.Error(), "no reply audio"):
		t.Errorf("mutation (reply audio dropped) must fail differently, got %v", dropped)
	}
	t.Logf("mutations: zeros → %v; dropped → %v", zeros, dropped)
	c.close()
	s.stop()
}

// TestRealtimeBargeIn: speech that starts while a reply is being generated cancels it:
// response.done status cancelled, reason turn_detected.
func TestRealtimeBargeIn(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	speech := sileroSpeech(t, "samples.pcm")
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt("interrupter", "")), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(serverVAD()))
	c.until("session.updated", nil)
	// This client plays nothing, so it says so (README: who turns echo cancellation off): with it
	// on, the residual-echo gate weighs its speech against a reply it never played, at a path
	// gain it never learned, and may withhold it (make test once heard no barge-in at all).
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"voiced": map[string]any{"echo_cancellation": false}}})
	c.until("session.updated", nil)

	// A long reply (the echo mind repeats it): 60 sentences, minutes of audio.
	var long strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&long, "This is sentence number %d of a very long answer that keeps on going. ", i)
	}
	c.send(textItem(long.String()))
	c.send(map[string]any{"type": "response.create"})
	evs := c.until("response.audio.delta", nil)
	var rid string
	for _, e := range evs {
		if e.Type == "response.created" {
			rid = e.str("response", "id")
		}
	}
	c.appendAudio(append(speech, silence24k(1.5)...))
	evs = c.until("response.done", func(e rtEvent) bool { return e.str("response", "id") == rid })
	done := evs[len(evs)-1]
	if st, reason := done.str("response", "status"), done.str("response", "status_details", "reason"); st != "cancelled" || reason != "turn_detected" {
		t.Fatalf("interrupted response.done: status %q reason %q, want cancelled/turn_detected: %.400s", st, reason, done.Raw)
	}
	started := false
	for _, e := range evs {
		started = started || e.Type == "input_audio_buffer.speech_started"
	}
	if !started {
		t.Errorf("the reply was cancelled without input_audio_buffer.speech_started before it: %v", types(evs))
	}
	c.checkStrict()
	c.close()
	s.stop()
}

// TestRealtimeGoClient: go-openai-realtime v0.6.1's own client (beta; its UnmarshalServerEvent
// refuses any event type it does not know), pointed at the test server through ClientConfig's
// BaseURL/APIBaseURL: CreateSession with a principal JWT, then a server_vad conversation.
func TestRealtimeGoClient(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	speech := sileroSpeech(t, "samples.pcm")
	ctx := ctxT(t, 90*time.Second)

	cfg := openairt.DefaultConfig(s.jwt("go-client", "acme"))
	cfg.BaseURL, cfg.APIBaseURL, cfg.HTTPClient = s.WSBase+"/v1/realtime", s.Base+"/v1", s.Client
	sess, err := openairt.NewClientWithConfig(cfg).CreateSession(ctx, &openairt.CreateSessionRequest{})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	cfg = openairt.DefaultConfig(sess.ClientSecret.Value)
	cfg.BaseURL, cfg.APIBaseURL, cfg.HTTPClient = s.WSBase+"/v1/realtime", s.Base+"/v1", s.Client
	dialer := openairt.NewCoderWebSocketDialer(openairt.CoderWebSocketOptions{
		ReadLimit: 64 << 20, DialOptions: &websocket.DialOptions{HTTPClient: s.Client},
	})
	conn, err := openairt.NewClientWithConfig(cfg).Connect(ctx, openairt.WithDialer(dialer))
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, s.logs)
	}
	defer conn.Close()

	read := func(want openairt.ServerEventType) []openairt.ServerEvent {
		t.Helper()
		var got []openairt.ServerEvent
		for {
			ev, err := conn.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("ReadMessage (after %d events) waiting for %s: %v", len(got), want, err)
			}
			got = append(got, ev)
			if e, ok := ev.(openairt.ErrorEvent); ok {
				t.Fatalf("error event: %+v", e.Error)
			}
			if ev.ServerEventType() == want {
				return got
			}
		}
	}
	read(openairt.ServerEventTypeSessionCreated)
	if err := conn.SendMessage(ctx, openairt.SessionUpdateEvent{Session: openairt.ClientSession{
		Modalities:    []openairt.Modality{openairt.ModalityText, openairt.ModalityAudio},
		TurnDetection: &openairt.ClientTurnDetection{Type: openairt.ClientTurnDetectionTypeServerVad},
	}}); err != nil {
		t.Fatal(err)
	}
	read(openairt.ServerEventTypeSessionUpdated)

	for turn := range 2 {
		pcm := append(append(silence24k(0.5), speech...), silence24k(1.5)...)
		for len(pcm) > 0 {
			n := min(len(pcm), 4800)
			if err := conn.SendMessage(ctx, openairt.InputAudioBufferAppendEvent{Audio: base64.StdEncoding.EncodeToString(audio.Int16ToBytes(pcm[:n]))}); err != nil {
				t.Fatal(err)
			}
			pcm = pcm[n:]
		}
		// The recording pauses mid-way: server_vad ends a turn there and the speech that
		// follows barges in on its reply. The turn is done at the first completed response.
		var deltas, cancelled int
		for {
			evs := read(openairt.ServerEventTypeResponseDone)
			deltas = 0
			for _, ev := range evs {
				switch ev.(type) {
				case openairt.ResponseCreatedEvent:
					deltas = 0
				case openairt.ResponseAudioDeltaEvent:
					deltas++
				}
			}
			done := evs[len(evs)-1].(openairt.ResponseDoneEvent)
			if done.Response.Status == openairt.ResponseStatusCompleted {
				break
			}
			if cancelled++; cancelled > 5 {
				t.Fatalf("turn %d: %d responses cancelled, none completed", turn, cancelled)
			}
		}
		if deltas == 0 {
			t.Fatalf("turn %d: the completed response carried no audio deltas", turn)
		}
	}
	conn.Close()
	s.stop()
}

// TestShutdownWithOpenConversation: SIGTERM while a realtime conversation is open and a reply is
// streaming: the process drains it and exits 0 within --shutdown-grace (3 s here), and the
// client's socket ends rather than hanging.
func TestShutdownWithOpenConversation(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	c := s.dialRealtime(t, s.mintBeta(t, s.jwt("shutdown-user", "")), true)
	c.until("session.created", nil)
	c.send(betaSessionUpdate(nil))
	c.until("session.updated", nil)
	c.send(textItem("Please say something before the server goes away."))
	c.send(map[string]any{"type": "response.create"})
	c.until("response.created", nil)
	s.stop() // SIGTERM, exit status 0 required
	for {
		if _, ok := c.next(30 * time.Second); !ok {
			break
		}
	}
	c.mu.Lock()
	err := c.readErr
	c.mu.Unlock()
	if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway && st != websocket.StatusNormalClosure {
		t.Errorf("socket ended with close status %v (%v), want going away (1001) or a normal close: never dropped without a word", st, err)
	}
	t.Logf("client socket ended: %v", err)
}

// pocketsphinxSpeech reads a pocketsphinx-testdata recording (raw: PCM16LE mono 16 kHz; or WAV)
// as 24 kHz PCM16; skips when the Debian package is not installed.
func pocketsphinxSpeech(t testing.TB, name string) []int16 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/usr/share/pocketsphinx/test/data", name))
	if err != nil {
		t.Skipf("pocketsphinx-testdata is not installed (scripts/install-deps.sh --test installs it): %v", err)
	}
	var pcm []float32
	var rate = 16000
	if strings.HasSuffix(name, ".wav") {
		if pcm, rate, err = audio.DecodeWAVBytes(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	} else if pcm, err = audio.PCM16ToFloat32(b[:len(b)&^1]); err != nil {
		t.Fatal(err)
	}
	return audio.Float32ToInt16(audio.Resample(pcm, rate, 24000))
}

// TestRealtimeRealSpeechGA: every real-speech source spoken into a GA server_vad conversation
// (a raw socket holding the same item rules with GA names): the floor opens on it and a reply
// completes with audio.
func TestRealtimeRealSpeechGA(t *testing.T) {
	checkLeaks(t)
	s := startRealtime(t, serverOpts{})
	sources := map[string]func(t *testing.T) []int16{
		"silero samples.pcm":       func(t *testing.T) []int16 { return sileroSpeech(t, "samples.pcm") },
		"silero samples2.pcm":      func(t *testing.T) []int16 { return sileroSpeech(t, "samples2.pcm") },
		"espeak-ng":                func(t *testing.T) []int16 { return espeakSpeech(t, "Could you tell me the time, please?") },
		"pocketsphinx numbers.raw": func(t *testing.T) []int16 { return pocketsphinxSpeech(t, "numbers.raw") },
		"pocketsphinx librivox 0880": func(t *testing.T) []int16 {
			return pocketsphinxSpeech(t, "librivox/sense_and_sensibility_01_austen_64kb-0880.wav")
		},
	}
	for name, source := range sources {
		t.Run(name, func(t *testing.T) {
			speech := source(t)
			c := s.dialRealtime(t, s.mintGA(t, s.jwt("ga-"+randHex(3), "")), false)
			c.until("session.created", nil)
			c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
				"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "server_vad"}}}}})
			c.until("session.updated", nil)
			c.appendAudio(append(append(silence24k(0.5), speech...), silence24k(1.5)...))
			evs := c.untilCompleted()
			if len(replyAudio(t, evs)) == 0 {
				t.Errorf("completed response without output audio: %v", types(evs))
			}
			c.checkStrict()
			c.close()
		})
	}
	s.stop()
}
