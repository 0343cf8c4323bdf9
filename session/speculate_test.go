package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/internal/testkit"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// chatMind is an OpenAI-compatible chat-completions server for the conversation's mind (reached
// through mind.OpenAI, as in production): it answers "You asked: <the last user message>" and
// reports each request's last user message on asked. With hold, a request waits for its
// client to go away and reports that on gone instead of answering.
type chatMind struct {
	hold  bool
	asked chan string
	gone  chan string

	mu    sync.Mutex
	calls int
}

func newChatMind(t *testing.T, hold bool) (*chatMind, mind.Mind) {
	t.Helper()
	f := &chatMind{hold: hold, asked: make(chan string, 16), gone: make(chan string, 16)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	m, err := mind.NewOpenAI(mind.OpenAIConfig{URL: srv.URL + "/v1", Model: "tiny", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

func (f *chatMind) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	last := ""
	for _, m := range body.Messages {
		if m.Role == "user" && m.Content != nil {
			last = *m.Content
		}
	}
	f.mu.Lock()
	f.calls++
	hold := f.hold && f.calls == 1
	f.mu.Unlock()
	f.asked <- last
	if hold {
		<-r.Context().Done()
		f.gone <- last
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, piece := range []string{"You asked: ", last} {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (f *chatMind) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// receive waits for a value on ch (10 s at most: the test's deadlock guard, not a timing claim).
func receive(t *testing.T, ch chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
		return ""
	}
}

// scriptDetector is a turn.Detector that answers its Nth Feed with script[N] (later feeds: no
// events), so a test places each turn event exactly.
type scriptDetector struct {
	script [][]turn.Event
	n      int
}

func (d *scriptDetector) Feed([]float32, int64) ([]turn.Event, error) {
	var evs []turn.Event
	if d.n < len(d.script) {
		evs = d.script[d.n]
	}
	d.n++
	return evs, nil
}
func (d *scriptDetector) Floor() turn.Floor { return turn.Quiet }
func (d *scriptDetector) Reset()            {}
func (d *scriptDetector) Close() error      { return nil }

// speculationCase runs one semantic_vad turn of pushes (20 ms of audio each) whose detector
// answers with script; between pushes, before[i] (when set) runs before push i.
type speculationCase struct {
	ears   string // the final transcript
	script [][]turn.Event
	hold   bool  // the mind holds its first request until it is cancelled
	voice  Voice // nil: fakeVoice
}

type speculationRun struct {
	t      *testing.T
	s      *Server
	tr     *fakeTransport
	mind   *chatMind
	end    func()
	pushes int
}

func startSpeculation(t *testing.T, tc speculationCase, speculate bool) *speculationRun {
	t.Helper()
	chat, m := newChatMind(t, tc.hold)
	script := &scriptDetector{script: tc.script}
	var voice Voice = fakeVoice{}
	if tc.voice != nil {
		voice = tc.voice
	}
	s, err := New(Config{Speculate: speculate, Engines: Engines{Ears: fakeEars{tc.ears}, Voice: voice, Mind: m,
		NewTurnDetector: func(td wire.TurnDetection, _ Partial) (turn.Detector, error) { return script, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newFakeTransport(t, Media{})
	run := &speculationRun{t: t, s: s, tr: tr, mind: chat, end: converse(t, s, tr)}
	tr.until("session.created")
	tr.event(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
		"audio": map[string]any{"input": map[string]any{"turn_detection": map[string]any{"type": "semantic_vad"}}}}})
	tr.until("session.updated")
	return run
}

// push sends 20 ms of 24 kHz audio (the detector's next script line).
func (r *speculationRun) push() {
	r.tr.event(appendEvent(pcm24(20, r.pushes == 0)))
	r.pushes++
}

// all is every event the engine sent, as JSON text.
func (r *speculationRun) all() string {
	r.tr.mu.Lock()
	defer r.tr.mu.Unlock()
	b, _ := json.Marshal(r.tr.events)
	return string(b)
}

func (r *speculationRun) outcome(name string) int {
	var m dto.Metric
	if err := r.s.metrics.speculations.WithLabelValues(name).Write(&m); err != nil {
		r.t.Fatal(err)
	}
	return int(m.GetCounter().GetValue())
}

// The turn: speech starts (push 0), the detector judges "What time is it?" finished in the pause
// (push 1), the turn ends (push 2).
var likelyTurn = [][]turn.Event{
	{turn.SpeechStarted{Start: 0}},
	{turn.EndLikely{At: 640, Transcript: "What time is it?"}},
	{turn.SpeechStopped{End: 960, SpeechEnd: 320}},
}

// A final transcript that matches the speculated one (normalised: case, punctuation, spaces)
// releases the held answer: the mind was asked before the turn ended, once, and the reply is that
// answer (it heard the partial's wording).
func TestSpeculationMatchingIsReleased(t *testing.T) {
	testkit.CheckLeaks(t)
	r := startSpeculation(t, speculationCase{ears: "what time  is it", script: likelyTurn}, true)
	r.push()
	r.push()
	if got := receive(t, r.mind.asked, "speculative mind call before the turn ended"); got != "What time is it?" {
		t.Fatalf("speculated on %q", got)
	}
	if strings.Contains(r.all(), "response.") {
		t.Fatalf("a speculation reached the client before the turn ended: %s", r.all())
	}
	r.push()
	evs := r.tr.until("response.done")
	done := evs[len(evs)-1]["response"].(map[string]any)
	if done["status"] != "completed" {
		t.Fatalf("response %v", done)
	}
	transcript := done["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["transcript"]
	if transcript != "You asked: What time is it?" {
		t.Errorf("reply %q, want the speculated answer", transcript)
	}
	if n := r.mind.count(); n != 1 {
		t.Errorf("the mind was asked %d times, want 1 (the speculation, released)", n)
	}
	if !strings.Contains(typesOf(evs), "response.output_audio.delta") {
		t.Errorf("no audio in the released reply: %s", typesOf(evs))
	}
	if r.outcome(specStarted) != 1 || r.outcome(specUsed) != 1 || r.outcome(specDiscarded) != 0 {
		t.Errorf("counters started %d used %d discarded %d, want 1 1 0", r.outcome(specStarted), r.outcome(specUsed), r.outcome(specDiscarded))
	}
	r.end()
}

// A final transcript that differs from the speculated one: the speculated answer is never sent
// (though the mind finished it), and the mind is asked again on the final text.
func TestSpeculationMismatchIsDiscarded(t *testing.T) {
	testkit.CheckLeaks(t)
	r := startSpeculation(t, speculationCase{ears: "What time is it in Paris?", script: likelyTurn}, true)
	r.push()
	r.push()
	receive(t, r.mind.asked, "speculative mind call")
	r.push()
	evs := r.tr.until("response.done")
	if got := receive(t, r.mind.asked, "the mind asked on the final text"); got != "What time is it in Paris?" {
		t.Fatalf("second call heard %q", got)
	}
	done := evs[len(evs)-1]["response"].(map[string]any)
	transcript := done["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["transcript"]
	if transcript != "You asked: What time is it in Paris?" {
		t.Errorf("reply %q", transcript)
	}
	if all := r.all(); strings.Contains(all, "You asked: What time is it?") {
		t.Errorf("the discarded speculation reached the client: %s", all)
	}
	if n := r.mind.count(); n != 2 {
		t.Errorf("mind calls %d, want 2", n)
	}
	if r.outcome(specStarted) != 1 || r.outcome(specUsed) != 0 || r.outcome(specDiscarded) != 1 {
		t.Errorf("counters started %d used %d discarded %d, want 1 0 1", r.outcome(specStarted), r.outcome(specUsed), r.outcome(specDiscarded))
	}
	r.end()
}

// The speaker goes on after the pause: the speculation is cancelled then (its request ends before
// the turn does), nothing of it is sent, and the reply asks the mind on the final text.
func TestSpeculationCancelledWhenSpeechResumes(t *testing.T) {
	testkit.CheckLeaks(t)
	script := [][]turn.Event{
		{turn.SpeechStarted{Start: 0}},
		{turn.EndLikely{At: 640, Transcript: "What time is it?"}},
		{turn.EndUnlikely{At: 960}},
		{turn.SpeechStopped{End: 1280, SpeechEnd: 960}},
	}
	r := startSpeculation(t, speculationCase{ears: "What time is it? And the date?", script: script, hold: true}, true)
	r.push()
	r.push()
	receive(t, r.mind.asked, "speculative mind call")
	r.push() // speech resumes
	if got := receive(t, r.mind.gone, "the speculative call cancelled"); got != "What time is it?" {
		t.Fatalf("cancelled %q", got)
	}
	if strings.Contains(r.all(), "response.") {
		t.Fatalf("a cancelled speculation reached the client: %s", r.all())
	}
	r.push()
	evs := r.tr.until("response.done")
	if got := receive(t, r.mind.asked, "the mind asked on the final text"); got != "What time is it? And the date?" {
		t.Fatalf("second call heard %q", got)
	}
	done := evs[len(evs)-1]["response"].(map[string]any)
	if done["status"] != "completed" {
		t.Fatalf("response %v", done)
	}
	if r.outcome(specDiscarded) != 1 || r.outcome(specUsed) != 0 {
		t.Errorf("counters used %d discarded %d, want 0 1", r.outcome(specUsed), r.outcome(specDiscarded))
	}
	r.end()
}

// With speculation off the mind is not asked before the turn ends.
func TestSpeculationOff(t *testing.T) {
	testkit.CheckLeaks(t)
	r := startSpeculation(t, speculationCase{ears: "What time is it?", script: likelyTurn}, false)
	r.push()
	r.push()
	r.push()
	r.tr.until("response.done")
	if n := r.mind.count(); n != 1 || r.outcome(specStarted) != 0 {
		t.Errorf("mind calls %d, speculations %d; want 1, 0", n, r.outcome(specStarted))
	}
	r.end()
}

func TestNormalise(t *testing.T) {
	for in, want := range map[string]string{
		"What time is it?":     "what time is it",
		"  what TIME, is  it ": "what time is it",
		"Don't stop!":          "don t stop",
		"...":                  "",
		"Ça va? Oui.":          "ça va oui",
	} {
		if got := normalise(in); got != want {
			t.Errorf("normalise(%q) = %q, want %q", in, got, want)
		}
	}
}

// countingVoice speaks 10 ms per character, every sample of its kth call (from 1) k×100, and
// reports each text it is asked on spoke.
type countingVoice struct {
	mu    sync.Mutex
	calls []string
	spoke chan string
}

func newCountingVoice() *countingVoice { return &countingVoice{spoke: make(chan string, 16)} }

func (v *countingVoice) Speak(ctx context.Context, text, _ string, _ float64, emit func([]int16) error) error {
	v.mu.Lock()
	v.calls = append(v.calls, text)
	k := len(v.calls)
	v.mu.Unlock()
	v.spoke <- text
	pcm := make([]int16, 240*len(text))
	for i := range pcm {
		pcm[i] = int16(100 * k)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return emit(pcm)
}

func (v *countingVoice) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.calls)
}

// sentSamples is every sample of the audio deltas among evs (PCM16 at 24 kHz), by value.
func sentSamples(t *testing.T, evs []map[string]any) map[int16]int {
	t.Helper()
	out := map[int16]int{}
	for _, ev := range evs {
		if ev["type"] != "response.output_audio.delta" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(ev["delta"].(string))
		if err != nil {
			t.Fatal(err)
		}
		pcm, err := audio.BytesToInt16(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range pcm {
			out[v]++
		}
	}
	return out
}

// A speculation synthesizes the first sentence of its answer while the turn is still held; the
// reply that adopts it sends that audio, with no synthesis of it after the turn ended.
func TestSpeculationSynthesizesFirstSentence(t *testing.T) {
	testkit.CheckLeaks(t)
	voice := newCountingVoice()
	r := startSpeculation(t, speculationCase{ears: "what time is it", script: likelyTurn, voice: voice}, true)
	r.push()
	r.push()
	if got := receive(t, voice.spoke, "the speculation's first sentence synthesized before the turn ended"); got != "You asked: What time is it?" {
		t.Fatalf("synthesized %q", got)
	}
	if strings.Contains(r.all(), "response.") {
		t.Fatalf("a speculation reached the client before the turn ended: %s", r.all())
	}
	r.push()
	evs := r.tr.until("response.done")
	if n := voice.count(); n != 1 {
		t.Errorf("the voice was asked %d times, want 1 (before the turn ended)", n)
	}
	if got := sentSamples(t, evs); len(got) != 1 || got[100] != 240*len("You asked: What time is it?") {
		t.Errorf("audio sent by sample value %v, want all of the held synthesis (100)", got)
	}
	r.end()
}

// A discarded speculation's synthesis is never sent: the reply speaks the final answer afresh.
func TestSpeculationDiscardedAudioNeverSent(t *testing.T) {
	testkit.CheckLeaks(t)
	voice := newCountingVoice()
	r := startSpeculation(t, speculationCase{ears: "What time is it in Paris?", script: likelyTurn, voice: voice}, true)
	r.push()
	r.push()
	receive(t, voice.spoke, "the speculation's first sentence synthesized")
	r.push()
	evs := r.tr.until("response.done")
	if got := receive(t, voice.spoke, "the final answer synthesized"); got != "You asked: What time is it in Paris?" {
		t.Fatalf("synthesized %q", got)
	}
	if got := sentSamples(t, evs); got[100] != 0 || got[200] != 240*len("You asked: What time is it in Paris?") {
		t.Errorf("audio sent by sample value %v, want only the final synthesis (200)", got)
	}
	r.end()
}
