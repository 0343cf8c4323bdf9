package session

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// countingMind counts the mind calls a conversation makes (a transcription session makes none).
type countingMind struct{ calls atomic.Int32 }

func (m *countingMind) Answer(ctx context.Context, req mind.Request, emit func(mind.Delta) error) (mind.Reply, error) {
	m.calls.Add(1)
	return mind.Echo{}.Answer(ctx, req, emit)
}

// tallyVoice counts syntheses.
type tallyVoice struct{ calls atomic.Int32 }

func (v *tallyVoice) Speak(ctx context.Context, text, voice string, speed float64, emit func([]int16) error) error {
	v.calls.Add(1)
	return fakeVoice{}.Speak(ctx, text, voice, speed, emit)
}

// speakTurns sends n turns of 400 ms of tone and 600 ms of quiet as appends (24 kHz pcm16).
func speakTurns(tr *fakeTransport, n int) {
	for range n {
		tr.event(appendEvent(pcm24(400, true)))
		tr.event(appendEvent(pcm24(600, false)))
	}
}

// A GA client makes its conversation a transcription session with its first session.update
// (type "transcription"): each server_vad turn is committed and transcribed, and nothing answers:
// no response event, no mind call, no synthesis; response.create is refused by name.
func TestTranscriptionSessionGA(t *testing.T) {
	testkit.CheckLeaks(t)
	m, v := &countingMind{}, &tallyVoice{}
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"hello there"}, Voice: v, Mind: m, NewTurnDetector: newEnergyDetector}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{})
	end := converse(t, s, tr)
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "transcription",
		"audio": map[string]any{"input": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 24000},
			"transcription":  map[string]any{"model": "gpt-4o-transcribe", "language": "en"},
			"turn_detection": map[string]any{"type": "server_vad", "silence_duration_ms": 200}}},
		"include": []string{"item.input_audio_transcription.logprobs"}}})
	up := tr.until("session.updated")
	sess := up[len(up)-1]["session"].(map[string]any)
	if sess["type"] != "transcription" || sess["object"] != "realtime.transcription_session" {
		t.Fatalf("session.updated: %v", sess)
	}
	in := sess["audio"].(map[string]any)["input"].(map[string]any)
	if in["transcription"].(map[string]any)["model"] != "gpt-4o-transcribe" || in["turn_detection"].(map[string]any)["type"] != "server_vad" {
		t.Fatalf("session.updated audio.input: %v", in)
	}
	speakTurns(tr, 2)
	var got []map[string]any
	for range 2 {
		got = append(got, tr.until("conversation.item.input_audio_transcription.completed")...)
	}
	tr.event(map[string]any{"type": "response.create", "event_id": "ev_r"})
	refused := tr.until("error")
	got = append(got, refused...)
	e := refused[len(refused)-1]["error"].(map[string]any)
	if e["code"] != wire.CodeTranscriptionSession || e["event_id"] != "ev_r" || !strings.Contains(e["message"].(string), "response.create") {
		t.Fatalf("response.create in a transcription session: %v", e)
	}
	end()
	kinds := typesOf(got)
	if strings.Count(kinds, "input_audio_buffer.committed") != 2 || strings.Count(kinds, "input_audio_transcription.completed") != 2 {
		t.Fatalf("want two committed, transcribed turns: %s", kinds)
	}
	for _, ev := range got {
		if c, ok := ev["transcript"]; ok && c != "hello there" {
			t.Errorf("transcript %v", c)
		}
	}
	tr.mu.Lock()
	all := typesOf(tr.events)
	tr.mu.Unlock()
	if strings.Contains(all, "response.") {
		t.Errorf("a transcription session answered: %s", all)
	}
	if m.calls.Load() != 0 || v.calls.Load() != 0 {
		t.Errorf("mind called %d times, voice %d: a transcription session never answers", m.calls.Load(), v.calls.Load())
	}
}

// A session's type is settled once its first update is applied: a later update to another
// type is refused, and so is a realtime session's second update asking for transcription.
func TestTranscriptionSessionTypeSettles(t *testing.T) {
	testkit.CheckLeaks(t)
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"x"}, NewTurnDetector: newEnergyDetector}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{})
	converse(t, s, tr)
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "hi"}})
	tr.until("session.updated")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "transcription"}})
	evs := tr.until("error")
	if e := evs[len(evs)-1]["error"].(map[string]any); e["param"] != "session.type" {
		t.Fatalf("type change after the first update: %v", e)
	}
}

// The beta dialect: ?intent=transcription opens a transcription session (transcription_session
// .created), transcription_session.update configures it (manual commit here), and a key minted by
// POST /v1/realtime/transcription_sessions opens one too, with the session it was minted with.
func TestTranscriptionSessionBeta(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"caption text"}, NewTurnDetector: newEnergyDetector}})
	beta := http.Header{"OpenAI-Beta": {"realtime=v1"}}

	c, _, err := ts.dial(t, "/v1/realtime?intent=transcription&ticket="+ts.ticket(t), &websocket.DialOptions{HTTPHeader: beta})
	if err != nil {
		t.Fatal(err)
	}
	created := c.expect("transcription_session.created")[0]["session"].(map[string]any)
	if created["object"] != "realtime.transcription_session" || created["input_audio_transcription"].(map[string]any)["model"] != wire.DefaultTranscriptionModel {
		t.Fatalf("transcription_session.created: %v", created)
	}
	c.send(map[string]any{"type": "transcription_session.update", "session": map[string]any{
		"input_audio_transcription": map[string]any{"model": "whisper-1", "prompt": "captions"}, "turn_detection": nil,
		"include": []string{"item.input_audio_transcription.logprobs"}}})
	up := c.expect("transcription_session.updated")[0]["session"].(map[string]any)
	if up["turn_detection"] != nil || up["input_audio_transcription"].(map[string]any)["prompt"] != "captions" {
		t.Fatalf("transcription_session.updated: %v", up)
	}
	c.send(appendEvent(pcm24(500, true)))
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	evs := c.until("conversation.item.input_audio_transcription.completed")
	if last := evs[len(evs)-1]; last["transcript"] != "caption text" {
		t.Fatalf("completed: %v", last)
	}
	c.send(map[string]any{"type": "response.create", "event_id": "ev_1"})
	c.expectError(wire.CodeTranscriptionSession)

	// An unknown intent is refused by name before the upgrade.
	if _, resp, err := ts.dial(t, "/v1/realtime?intent=chat&ticket="+ts.ticket(t), nil); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("?intent=chat: err %v, resp %v", err, resp)
	}

	// A key minted for a transcription session (beta), used as the bearer.
	code, out := ts.post(t, "/v1/realtime/transcription_sessions", token(t, ts.clock, nil), map[string]any{
		"input_audio_format": "g711_ulaw", "input_audio_transcription": map[string]any{"model": "gpt-4o-mini-transcribe", "language": "de"},
		"turn_detection": map[string]any{"type": "server_vad", "silence_duration_ms": 300}, "modalities": []string{"text"},
		"client_secret": map[string]any{"expires_at": map[string]any{"anchor": "created_at", "seconds": 120}}}, nil)
	if code != http.StatusOK {
		t.Fatalf("transcription_sessions: %d %v", code, out)
	}
	secret := out["client_secret"].(map[string]any)
	key, _ := secret["value"].(string)
	if !strings.HasPrefix(key, "ek_") || out["input_audio_format"] != "g711_ulaw" || secret["expires_at"].(float64) != float64(ts.clock.Now().Add(120*time.Second).Unix()) {
		t.Fatalf("transcription_sessions answer: %v", out)
	}
	hdr := beta.Clone()
	hdr.Set("Authorization", "Bearer "+key)
	k, _, err := ts.dial(t, "/v1/realtime?model=gpt-4o-transcribe", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	s := k.expect("transcription_session.created")[0]["session"].(map[string]any)
	if s["input_audio_format"] != "g711_ulaw" || s["input_audio_transcription"].(map[string]any)["language"] != "de" ||
		s["turn_detection"].(map[string]any)["silence_duration_ms"] != 300.0 {
		t.Fatalf("session of the minted key: %v", s)
	}
	k.send(map[string]any{"type": "response.create"})
	k.expectError(wire.CodeTranscriptionSession)

	// A bad transcription session object is refused by name, no key minted.
	code, out = ts.post(t, "/v1/realtime/transcription_sessions", token(t, ts.clock, nil), map[string]any{"voice": "alloy"}, nil)
	if code != http.StatusBadRequest || !strings.Contains(out["message"].(string), "session.voice") {
		t.Fatalf("transcription_sessions with voice: %d %v", code, out)
	}
}

// POST /v1/realtime/client_secrets with session.type "transcription" mints a key whose
// conversation is a transcription session (GA).
func TestTranscriptionClientSecret(t *testing.T) {
	testkit.CheckLeaks(t)
	ts := newTestServer(t, Config{Engines: Engines{Ears: fakeEars{"x"}, NewTurnDetector: newEnergyDetector}})
	code, out := ts.post(t, "/v1/realtime/client_secrets", token(t, ts.clock, nil), map[string]any{
		"session": map[string]any{"type": "transcription", "audio": map[string]any{"input": map[string]any{
			"transcription": map[string]any{"model": "whisper-1"}, "noise_reduction": map[string]any{"type": "near_field"},
			"turn_detection": map[string]any{"type": "semantic_vad", "eagerness": "high"}}}}}, nil)
	if code != http.StatusOK {
		t.Fatalf("client_secrets: %d %v", code, out)
	}
	sess := out["session"].(map[string]any)
	if sess["type"] != "transcription" {
		t.Fatalf("client_secrets session: %v", sess)
	}
	hdr := http.Header{"Authorization": {"Bearer " + out["value"].(string)}}
	c, _, err := ts.dial(t, "/v1/realtime", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	s := c.expect("session.created")[0]["session"].(map[string]any)
	in := s["audio"].(map[string]any)["input"].(map[string]any)
	if s["type"] != "transcription" || in["turn_detection"].(map[string]any)["eagerness"] != "high" || in["noise_reduction"].(map[string]any)["type"] != "near_field" {
		t.Fatalf("session.created: %v", s)
	}
}
