package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/wire"
)

// These tests drive the conversation engine through its Transport seam with no socket at all:
// client events and track audio in, server events and played audio out, as the WebRTC transport
// will. fakeTransport records what the engine sends; fakePlayer stands in for a real-time
// player whose played position the test moves by hand.

// fakeTransport is a Transport: in feeds Receive (closing it is the client leaving); Send
// records each event.
type fakeTransport struct {
	t      testing.TB
	in     chan Inbound
	media  Media
	mu     sync.Mutex
	events []map[string]any
	times  []time.Time // when each event was sent (benchmarks)
	read   int         // events handed out by next
	kick   chan struct{}
	ends   []End
}

func newFakeTransport(t testing.TB, media Media) *fakeTransport {
	return &fakeTransport{t: t, in: make(chan Inbound), media: media, kick: make(chan struct{}, 1)}
}

func (f *fakeTransport) Media() Media { return f.media }

func (f *fakeTransport) Receive(ctx context.Context) (Inbound, error) {
	select {
	case in, ok := <-f.in:
		if !ok {
			return Inbound{}, ErrClientClosed
		}
		return in, nil
	case <-ctx.Done():
		return Inbound{}, ctx.Err()
	}
}

func (f *fakeTransport) Send(_ context.Context, event []byte) error {
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		return err
	}
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.times = append(f.times, time.Now())
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
	return nil
}

func (f *fakeTransport) Close(end End, _ string) {
	f.mu.Lock()
	f.ends = append(f.ends, end)
	f.mu.Unlock()
}

// event sends one client event.
func (f *fakeTransport) event(ev map[string]any) {
	b, _ := json.Marshal(ev)
	f.in <- Inbound{Event: b}
}

// next returns the next server event the engine sent, waiting for it.
func (f *fakeTransport) next() map[string]any {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		if f.read < len(f.events) {
			ev := f.events[f.read]
			f.read++
			f.mu.Unlock()
			return ev
		}
		f.mu.Unlock()
		select {
		case <-f.kick:
		case <-deadline:
			f.t.Fatal("no server event within 10 s")
		}
	}
}

// until reads events up to and including one of type typ.
func (f *fakeTransport) until(typ string) []map[string]any {
	f.t.Helper()
	var out []map[string]any
	for {
		ev := f.next()
		out = append(out, ev)
		if ev["type"] == typ {
			return out
		}
	}
}

// fakePlayer is a Player whose clock the test moves: played advances only by advance.
type fakePlayer struct {
	mu      sync.Mutex
	queued  []int16 // everything queued, in order (cleared audio included)
	played  int64
	pending int64 // queued, not yet played nor cleared
	clears  int
	got     chan struct{}
}

func newFakePlayer() *fakePlayer { return &fakePlayer{got: make(chan struct{}, 1)} }

func (p *fakePlayer) Play(ctx context.Context, _ string, pcm []int16) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := ctx.Err(); err != nil { // checked under the lock Clear takes: nothing queues after a cut
		return err
	}
	p.queued = append(p.queued, pcm...)
	p.pending += int64(len(pcm))
	select {
	case p.got <- struct{}{}:
	default:
	}
	return nil
}

func (p *fakePlayer) Clear() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = 0
	p.clears++
	return p.played
}

func (p *fakePlayer) Played() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.played
}

// advance plays n more samples (at most what is pending).
func (p *fakePlayer) advance(n int64) {
	p.mu.Lock()
	n = min(n, p.pending)
	p.played += n
	p.pending -= n
	p.mu.Unlock()
}

// waitQueued waits until at least n samples were queued.
func (p *fakePlayer) waitQueued(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		have := len(p.queued)
		p.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-p.got:
		case <-deadline:
			t.Fatalf("the player was given %d samples, want %d", have, n)
		}
	}
}

// tone16 is ms of track audio (16 kHz samples): a 300 Hz tone when loud, else silence.
func tone16(ms int, loud bool) []float32 {
	s := make([]float32, 16*ms)
	if loud {
		for i := range s {
			s[i] = float32(12000.0 / 32768 * math.Sin(2*math.Pi*300*float64(i)/16000))
		}
	}
	return s
}

// converse runs a conversation on tr in the background; the returned func ends it (the client
// leaves) and waits for the engine to return.
func converse(t *testing.T, s *Server, tr *fakeTransport) (end func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Converse(context.Background(), tr, Grant{Principal: Principal{Subject: "engine-test-" + t.Name()}}, wire.GA, "m")
	}()
	var once sync.Once
	end = func() {
		once.Do(func() {
			close(tr.in)
			<-done
		})
	}
	t.Cleanup(end)
	return end
}

func typesOf(evs []map[string]any) string {
	var out []string
	for _, e := range evs {
		out = append(out, e["type"].(string))
	}
	return strings.Join(out, " ")
}

// A spoken turn over a WebRTC-like transport: audio in on a track, the turn detected, its
// transcript, the reply's audio handed to the player (no audio delta event), and an append event
// refused by name.
func TestEngineTrackTurnToPlayer(t *testing.T) {
	testkit.CheckLeaks(t)
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"hello there"}, Voice: fakeVoice{}, NewTurnDetector: newEnergyDetector}})
	if err != nil {
		t.Fatal(err)
	}
	player := newFakePlayer()
	tr := newFakeTransport(t, Media{TrackInput: true, Player: player})
	end := converse(t, s, tr)

	if ev := tr.next(); ev["type"] != "session.created" {
		t.Fatalf("first event %v", ev["type"])
	}
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"transcription": map[string]any{"model": "whisper-1"},
			"turn_detection": map[string]any{"type": "server_vad"}}}}})
	tr.until("session.updated")

	tr.event(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(make([]byte, 480))})
	if ev := tr.next(); ev["type"] != "error" || ev["error"].(map[string]any)["code"] != codeAppendOverTrack {
		t.Fatalf("append over a track: %v, want error %s", ev, codeAppendOverTrack)
	}

	// Track audio, 20 ms at a time: 400 ms of speech, then silence.
	for i := range 40 {
		tr.in <- Inbound{Audio: tone16(20, i < 20)}
	}
	evs := tr.until("response.done")
	got := typesOf(evs)
	for _, want := range []string{"input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
		"input_audio_buffer.committed", "conversation.item.input_audio_transcription.completed",
		"response.created", "response.output_audio_transcript.delta", "response.done"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in %s", want, got)
		}
	}
	if strings.Contains(got, "response.output_audio.delta") {
		t.Errorf("audio deltas sent over a transport with a player: %s", got)
	}
	for _, ev := range evs {
		if ev["type"] == "input_audio_buffer.speech_started" && ev["audio_start_ms"].(float64) != 0 {
			t.Errorf("speech_started at %v ms, want 0", ev["audio_start_ms"])
		}
	}
	// "You said: hello there." spoken by fakeVoice: 240 samples a character, all to the player.
	done := evs[len(evs)-1]["response"].(map[string]any)
	if done["status"] != "completed" {
		t.Fatalf("response %v", done["status"])
	}
	spoken := done["usage"].(map[string]any)["spoken_seconds"]
	player.mu.Lock()
	queued := len(player.queued)
	player.mu.Unlock()
	if queued == 0 || spoken == nil || math.Abs(spoken.(float64)-float64(queued)/24000) > 1e-9 {
		t.Errorf("player got %d samples; response.done says %v s spoken", queued, spoken)
	}
	end()
}

// Barge-in on a player: speech cuts the reply, the player drops what it has not played, the
// assistant item is truncated to exactly the samples played, and output_audio_buffer.cleared is
// sent; output_audio_buffer.clear from the client works too.
func TestEngineBargeInCutsUnplayedAudio(t *testing.T) {
	testkit.CheckLeaks(t)
	gate := make(chan struct{})
	s, err := New(Config{Engines: Engines{Ears: fakeEars{"tell me a story. a long one"}, Voice: fakeVoice{gate: gate}, NewTurnDetector: newEnergyDetector}})
	if err != nil {
		t.Fatal(err)
	}
	player := newFakePlayer()
	tr := newFakeTransport(t, Media{TrackInput: true, Player: player})
	end := converse(t, s, tr)
	tr.until("session.created")

	tr.in <- Inbound{Audio: tone16(300, true)}
	tr.in <- Inbound{Audio: tone16(300, false)}
	tr.until("response.created")
	gate <- struct{}{} // the first piece ("You said: tell me a story.") is spoken
	first := 240 * len("You said: tell me a story.")
	player.waitQueued(t, first)
	const played = 2000
	player.advance(played)

	tr.in <- Inbound{Audio: tone16(100, true)} // the user speaks over it
	evs := tr.until("response.done")
	// The cut is sent by the input side, response.done by the reply's: either may come first (as
	// at OpenAI, where cleared follows response.done).
	if !strings.Contains(typesOf(evs), "output_audio_buffer.cleared") {
		evs = append(evs, tr.until("output_audio_buffer.cleared")...)
	}
	got := typesOf(evs)
	if !strings.Contains(got, "input_audio_buffer.speech_started") || !strings.Contains(got, "output_audio_buffer.cleared") {
		t.Fatalf("barge-in events: %s", got)
	}
	var done map[string]any
	for _, ev := range evs {
		if ev["type"] == "response.done" {
			done = ev["response"].(map[string]any)
		}
	}
	if done["status"] != "cancelled" || done["status_details"].(map[string]any)["reason"] != "turn_detected" {
		t.Fatalf("response.done %v %v", done["status"], done["status_details"])
	}
	var itemID string
	for _, ev := range evs {
		if ev["type"] == "response.output_item.added" {
			itemID = ev["item"].(map[string]any)["id"].(string)
		}
	}
	// The server's cut is announced as a client's truncate is answered: at the sample played.
	if !strings.Contains(typesOf(evs), "conversation.item.truncated") {
		evs = append(evs, tr.until("conversation.item.truncated")...)
	}
	for _, ev := range evs {
		if ev["type"] == "conversation.item.truncated" {
			if ev["item_id"] != itemID || ev["content_index"] != float64(0) || ev["audio_end_ms"] != float64(played*1000/24000) {
				t.Errorf("conversation.item.truncated %v, want item %s content 0 audio_end_ms %d", ev, itemID, played*1000/24000)
			}
		}
	}
	tr.event(map[string]any{"type": "conversation.item.retrieve", "item_id": itemID})
	it := tr.until("conversation.item.retrieved")
	item := it[len(it)-1]["item"].(map[string]any)
	part := item["content"].([]any)[0].(map[string]any)
	b, _ := base64.StdEncoding.DecodeString(part["audio"].(string))
	if len(b) != 2*played {
		t.Errorf("kept audio %d bytes, want %d (the samples played)", len(b), 2*played)
	}
	transcript := part["transcript"].(string)
	if item["status"] != "incomplete" || transcript == "" || !strings.HasPrefix("You said: tell me a story.", transcript) ||
		len(transcript) >= len("You said: tell me a story.") {
		t.Errorf("truncated item: status %v, transcript %q", item["status"], transcript)
	}

	tr.event(map[string]any{"type": "output_audio_buffer.clear"})
	if ev := tr.until("output_audio_buffer.cleared"); len(ev) != 1 {
		t.Errorf("before output_audio_buffer.cleared: %s", typesOf(ev))
	}
	player.mu.Lock()
	clears := player.clears
	player.mu.Unlock()
	if clears != 2 {
		t.Errorf("player cleared %d times, want 2 (barge-in, client clear)", clears)
	}
	end()
}

// Over a transport without a player (the WebSocket's media), output_audio_buffer.clear does
// nothing and audio travels in delta events; the engine ends the transport with Close.
func TestEngineEventsOnlyTransport(t *testing.T) {
	testkit.CheckLeaks(t)
	s, err := New(Config{Engines: Engines{Voice: fakeVoice{}}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{})
	end := converse(t, s, tr)
	tr.until("session.created")
	tr.event(map[string]any{"type": "output_audio_buffer.clear"})
	tr.event(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}})
	tr.until("conversation.item.done")
	tr.event(map[string]any{"type": "response.create"})
	evs := tr.until("response.done")
	if got := typesOf(evs); !strings.Contains(got, "response.output_audio.delta") || strings.Contains(got, "output_audio_buffer") {
		t.Errorf("events-only reply: %s", got)
	}
	end()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.ends) == 0 || tr.ends[len(tr.ends)-1] != EndNormal {
		t.Errorf("transport closes %v, want a final EndNormal", tr.ends)
	}
}
