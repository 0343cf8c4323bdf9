package speechdoor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// The text-to-speech doors: WS /v1/synthesize (this file), WS /v1/speak/stream (speak.go) and
// POST /v1/audio/speech (speech.go). They share the refusals, the origin check
// and the socket writer below.

// ttsFrameLimit is the largest text frame or body the speaking doors read (4 MiB); more is
// refused by name. ttsDrainLimit bounds what is read and thrown away of an oversize frame before
// the socket is closed instead.
const (
	ttsFrameLimit   = 4 << 20
	ttsDrainLimit   = 64 << 20
	ttsWriteTimeout = 10 * time.Second
	ttsQueueFrames  = 16
	// ttsQueueBytes bounds the audio a speaking socket has waiting for its writer (queued or being
	// written): once this much waits, the producer (the read loop of /v1/synthesize, the speak
	// stream's speaker) stops before its next synthesis until the client reads: backpressure,
	// nothing is dropped. A socket so holds less than ttsQueueBytes plus one chunk of audio (at
	// most kokoro.MaxPhonemes' worth, one model call). 1 MiB is 22 s of audio, more than a
	// client needs buffered ahead of playback; the kernel's send buffer holds more still. Before
	// it the queue was bounded by frames only: ttsQueueFrames (16) chunks of up to ~1.6 MB
	// each, per socket, on both doors.
	ttsQueueBytes = 1 << 20
)

// Refusals of the speaking doors, by name. In a socket they arrive as
// {"type":"error","name":…,"message":…} and the socket stays open unless said otherwise; before an
// upgrade or over HTTP they carry the status.
var (
	ErrVoiceNotMounted = door.NewRefusal(http.StatusBadRequest, "voice_not_mounted",
		"that voice is not mounted")
	ErrVoiceLanguageNotServed = door.NewRefusal(http.StatusBadRequest, "voice_language_not_served",
		"that voice's language has no G2P here (Japanese and Mandarin): pick a voice of a served language (/v1/speech/health)")
	ErrSpeedOutOfRange = door.NewRefusal(http.StatusBadRequest, "speed_out_of_range",
		fmt.Sprintf("speed must be a number from %g to %g", kokoro.MinSpeed, kokoro.MaxSpeed))
	ErrEmptyText = door.NewRefusal(http.StatusBadRequest, "empty_text",
		"the text has nothing to say (empty, or only punctuation, emoji or symbols)")
	ErrTextTooLarge = door.NewRefusal(http.StatusRequestEntityTooLarge, "text_too_large",
		"text may be at most 4 MiB; it was refused, the socket stays open")
	ErrBinaryRefused = door.NewRefusal(http.StatusBadRequest, "binary_not_accepted",
		"this door takes text only; audio only ever travels outward on it")
	ErrMalformedJSON = door.NewRefusal(http.StatusBadRequest, "malformed_json",
		"the frame is not a JSON object; the socket stays open")
	ErrUnknownSpeakMessage = door.NewRefusal(http.StatusBadRequest, "unknown_message",
		"message types are start, text, flush, cancel and end")
	ErrIdleTimeout = door.NewRefusal(http.StatusRequestTimeout, "idle_timeout",
		"nothing was sent or spoken for too long; the socket is closed")
	ErrSynthesisFailed = door.NewRefusal(http.StatusInternalServerError, "synthesis_failed",
		"the synthesis model failed on this text; see the server log")
)

// speakingRoutes claims the text-to-speech routes; routes() calls it.
func (s *Doors) speakingRoutes() {
	s.Handle("GET /v1/synthesize", NewSynthesizeDoor(s))
	s.Handle("GET /v1/speak/stream", NewSpeakDoor(s))
	s.Handle("POST /v1/audio/speech", NewSpeechDoor(s))
}

// synthesisError maps an engine error to what a client is shown.
func synthesisError(err error) *door.Refusal {
	var r *door.Refusal
	switch {
	case errors.As(err, &r):
		return r
	case errors.Is(err, kokoro.ErrUnknownVoice):
		return door.Refuse(ErrVoiceNotMounted, err.Error())
	case errors.Is(err, kokoro.ErrVoiceLanguage):
		return door.Refuse(ErrVoiceLanguageNotServed, err.Error())
	case errors.Is(err, kokoro.ErrSpeed):
		return ErrSpeedOutOfRange
	case errors.Is(err, kokoro.ErrNothingToSay):
		return ErrEmptyText
	case errors.Is(err, kokoro.ErrClosed):
		return door.ErrShuttingDown
	}
	return ErrSynthesisFailed
}

// parseSpeed reads a speed parameter: "" is 0 (the default), anything else must be a number in
// range.
func parseSpeed(s string) (float32, error) {
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return 0, ErrSpeedOutOfRange
	}
	if _, err := kokoro.CheckSpeed(float32(f)); err != nil {
		return 0, ErrSpeedOutOfRange
	}
	return float32(f), nil
}

// checkVoice refuses a voice that is not mounted, naming the mounted ones.
func checkVoice(e *kokoro.Engine, voice string) error {
	if voice == "" || e.HasVoice(voice) {
		return nil
	}
	return door.Refuse(ErrVoiceNotMounted, fmt.Sprintf("voice %q is not mounted; mounted voices: %s", clip(voice), strings.Join(e.Voices(), ", ")))
}

// admitSocket admits one raw-door WebSocket through the door kit: the origin, a session slot
// (429 + Retry-After at the cap), a place in the shutdown registry (503 shutting_down while
// draining), then the upgrade. Every refusal is answered by name before ok is false. done releases
// all of it; ctx is cancelled when the shutdown grace ends.
func (s *Doors) admitSocket(w http.ResponseWriter, r *http.Request) (ctx context.Context, conn *websocket.Conn, done func(), ok bool) {
	kit := door.Kit{Origins: s.cfg.Origins, Sockets: s.Sockets, Refuse: s.refuse}
	ctx, conn, done, ok = kit.Upgrade(w, r, func() (func(), error) { return s.Gate.Acquire("") }, nil)
	if ok {
		conn.SetReadLimit(-1) // door.ReadFrame's limits, so an oversize frame gets a named error
	}
	return ctx, conn, done, ok
}

// readTextFrame reads one frame of at most ttsFrameLimit bytes (door.ReadFrame). tooLarge reports
// a frame that was over and has been drained; err is set when the socket is done.
func readTextFrame(ctx context.Context, conn *websocket.Conn) (typ websocket.MessageType, data []byte, tooLarge bool, err error) {
	typ, data, err = door.ReadFrame(ctx, conn, ttsFrameLimit, ttsDrainLimit)
	if errors.Is(err, door.ErrFrameTooLarge) {
		return typ, nil, true, nil
	}
	return typ, data, errors.Is(err, door.ErrFrameOverDrain), err
}

// socketWriter is a speaking socket's writer (a door.Writer: the one goroutine that writes it,
// ttsQueueFrames frames queued, each write bounded by ttsWriteTimeout) and what these doors add:
// generations and audio backpressure. A frame of generation 0 is always written; any other
// generation is written only while it is the writer's current one (the speak stream's cancel
// bumps it, so audio of a cancelled piece that is still on its way is dropped).
type socketWriter struct {
	conn *websocket.Conn
	w    *door.Writer
	log  *slog.Logger
	gen  atomic.Int64 // current generation
	// sent is told the seconds of each audio frame written (the meter's spoken seconds); may be nil.
	sent func(seconds float64)
	// queued is the audio, in bytes, sent to the writer and not yet written or dropped; drained
	// (capacity 1) is poked each time it falls. One producer waits on it (pcm).
	queued  atomic.Int64
	drained chan struct{}
	// encoded: binary frames carry an encoded format (?format=); frameSamples are their samples,
	// in queue order, for the meter (synthformat.go).
	encoded      bool
	samplesMu    sync.Mutex
	frameSamples []int
}

func newSocketWriter(conn *websocket.Conn, log *slog.Logger, sent func(seconds float64)) *socketWriter {
	w := &socketWriter{conn: conn, log: log, sent: sent, drained: make(chan struct{}, 1)}
	w.w = door.NewWriter(door.WriterConfig{Queue: ttsQueueFrames, Timeout: ttsWriteTimeout, Done: w.done})
	return w
}

// run writes frames until finish, a close frame, or a failed write (the client is gone or
// stuck), which cancels the session; the rest is discarded.
func (w *socketWriter) run(ctx context.Context, cancel context.CancelFunc) {
	if w.w.Run(ctx, w.conn) != nil {
		cancel()
	}
}

// done takes an audio frame off the queued bytes, written or dropped, wakes the producer, and
// meters what was written.
func (w *socketWriter) done(m door.Message, written bool) {
	if m.Type != websocket.MessageBinary {
		return
	}
	w.queued.Add(-int64(len(m.Data)))
	select {
	case w.drained <- struct{}{}:
	default:
	}
	samples := len(m.Data) / 2
	if w.encoded {
		samples = w.popSamples() // an encoded frame's bytes are not its samples (synthformat.go)
	}
	if written && w.sent != nil {
		w.sent(float64(samples) / kokoro.SampleRate)
	}
}

// send queues a frame of generation gen; false when the session is over.
func (w *socketWriter) send(ctx context.Context, gen int64, typ websocket.MessageType, data []byte) bool {
	m := door.Message{Type: typ, Data: data}
	if gen != 0 {
		m.Stale = func() bool { return gen != w.gen.Load() }
	}
	return w.w.Send(ctx, m)
}

func (w *socketWriter) json(ctx context.Context, gen int64, v any) bool {
	data, err := json.Marshal(v)
	if err != nil {
		w.log.Error("speaking door: encode frame", "err", err)
		return false
	}
	return w.send(ctx, gen, websocket.MessageText, data)
}

// pcm queues one binary frame of audio (PCM16LE: one frame, not fragments: clients read a
// chunk's audio as one frame), then waits while ttsQueueBytes or more of audio waits for the
// writer: the caller's next synthesis starts only once the client has read enough
// (backpressure). False when the session is over.
func (w *socketWriter) pcm(ctx context.Context, gen int64, pcm []int16) bool {
	data := audio.Int16ToBytes(pcm)
	if data == nil {
		data = []byte{} // still a frame: nil writes nothing
	}
	n := int64(len(data))
	w.queued.Add(n)
	if !w.send(ctx, gen, websocket.MessageBinary, data) {
		w.queued.Add(-n)
		return false
	}
	return w.waitDrained(ctx)
}

// waitDrained waits while ttsQueueBytes or more of audio waits for the writer (backpressure);
// false when the session is over.
func (w *socketWriter) waitDrained(ctx context.Context) bool {
	for w.queued.Load() >= ttsQueueBytes {
		select {
		case <-w.drained:
		case <-ctx.Done():
			return false
		case <-w.w.Stopped():
			return false
		}
	}
	return true
}

// flush waits until everything queued before it has been written (or dropped).
func (w *socketWriter) flush(ctx context.Context) { w.w.Flush(ctx) }

// closeWith queues the close frame: the writer stops once it is written.
func (w *socketWriter) closeWith(ctx context.Context, code websocket.StatusCode, reason string) {
	w.w.Close(ctx, code, reason)
}

// finish lets the writer write what is queued, then stop (the owner, once nothing more is sent).
func (w *socketWriter) finish(ctx context.Context) { w.w.Finish(ctx) }

func samplesMs(samples int) float64 {
	return float64(samples) * 1000 / kokoro.SampleRate
}

func sinceMs(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// SynthesizeDoor serves WS /v1/synthesize (reference/000): each text frame is one utterance,
// spoken in order; each sentence's audio goes out as soon as it exists as a JSON header
// immediately followed by the binary PCM16LE 24 kHz it describes; utteranceComplete ends an
// utterance. Query parameters voice and speed apply to the whole socket. The read loop does not
// read the next frame while an utterance is spoken, so a client's close (and shutdown) lets the
// utterance in flight finish first.
type SynthesizeDoor struct {
	svc *Doors
	// IdleTimeout closes a socket that sent no frame for this long while nothing was spoken
	// (default: the service's Config.SocketIdle).
	IdleTimeout time.Duration
}

// NewSynthesizeDoor returns the door reading its engine, gate and socket registry from svc.
func NewSynthesizeDoor(svc *Doors) *SynthesizeDoor {
	return &SynthesizeDoor{svc: svc, IdleTimeout: svc.cfg.SocketIdle}
}

type synthReady struct {
	Type              string `json:"type"`
	ModelID           string `json:"modelId"`
	Voice             string `json:"voice"`
	SampleRate        int    `json:"sampleRate"`
	Encoding          string `json:"encoding"`
	Channels          int    `json:"channels"`
	Device            string `json:"device"`
	ExecutionProvider string `json:"executionProvider"`
}

type synthAudio struct {
	Type         string   `json:"type"` // audio
	Utterance    int      `json:"utterance"`
	Seq          int      `json:"seq"`
	Samples      int      `json:"samples"`
	DurationMs   float64  `json:"durationMs"`
	Text         string   `json:"text"`
	FirstFrameMs *float64 `json:"firstFrameMs,omitempty"`
}

type synthComplete struct {
	Type       string  `json:"type"` // utteranceComplete
	Utterance  int     `json:"utterance"`
	Chunks     int     `json:"chunks"`
	DurationMs float64 `json:"durationMs"`
}

func (d *SynthesizeDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	engine := d.svc.speech.Kokoro
	if engine == nil {
		d.svc.refuse(w, speechcore.ErrNotWarm)
		return
	}
	q := r.URL.Query()
	voice := q.Get("voice")
	if err := checkVoice(engine, voice); err != nil {
		d.svc.refuse(w, err)
		return
	}
	if voice == "" {
		voice = engine.DefaultVoice()
	}
	speed, err := parseSpeed(q.Get("speed"))
	if err != nil {
		d.svc.refuse(w, err)
		return
	}
	format, refusal := synthFormat(r)
	if refusal != nil {
		d.svc.refuse(w, refusal)
		return
	}
	ctx, conn, done, ok := d.svc.admitSocket(w, r)
	if !ok {
		return // refused by name already
	}
	defer done()
	device, provider := "cpu", "cpu"
	if d.svc.speech.Env != nil {
		device, provider = d.svc.speech.Env.Device(), d.svc.speech.Env.ExecutionProvider()
	}
	defer d.svc.opened("synthesize")()
	defer d.svc.holdUsage()() // the meter's close waits for this door's last seconds
	s := &synthSession{svc: d.svc, conn: conn, engine: engine, voice: voice, speed: speed, format: format, w: newSocketWriter(conn, d.svc.log, d.svc.tab(r).spoken)}
	s.w.encoded = format != ""
	s.idle = newIdleWatch(d.IdleTimeout, nil) // closeIdle declines while an utterance is spoken
	s.run(ctx, d.svc.Sockets.Draining(), synthReady{
		Type: "ready", ModelID: speechcore.KokoroModelID, Voice: voice, SampleRate: kokoro.SampleRate,
		Encoding: synthEncoding(format), Channels: 1, Device: device, ExecutionProvider: provider,
	})
}

// synthSession is one /v1/synthesize socket; run (the read loop) owns it and waits for the writer
// and the drain watcher.
type synthSession struct {
	svc    *Doors
	conn   *websocket.Conn
	engine *kokoro.Engine
	voice  string
	speed  float32
	format string // ?format= (synthformat.go); "" is raw PCM16LE
	w      *socketWriter
	idle   *idleWatch // poked by the read loop; busy while an utterance is spoken

	mu       sync.Mutex
	speaking bool // an utterance is in flight
	draining bool // shutdown began
	idled    bool // the idle watcher is closing the socket: no utterance starts
}

// closeIdle closes the socket for idleness unless an utterance is being spoken (or shutdown
// began): then it declines and the idle period starts again.
func (s *synthSession) closeIdle(ctx context.Context) bool {
	s.mu.Lock()
	if s.speaking || s.draining {
		s.mu.Unlock()
		return false
	}
	s.idled = true
	s.mu.Unlock()
	s.w.json(ctx, 0, door.Frame(ErrIdleTimeout))
	s.w.closeWith(ctx, websocket.StatusPolicyViolation, ErrIdleTimeout.Name())
	return true
}

func (s *synthSession) run(ctx context.Context, draining <-chan struct{}, ready synthReady) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.w.run(ctx, cancel) }()
	stopWatch := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	stopDrain := door.WatchDrain(ctx, draining, func() { s.drain(ctx) })
	go func() { defer watch.Done(); s.idle.run(ctx, stopWatch, func() bool { return s.closeIdle(ctx) }) }()

	s.w.json(ctx, 0, ready)
	for utterance := 0; ; utterance++ {
		typ, data, tooLarge, err := readTextFrame(ctx, s.conn)
		if err != nil {
			if tooLarge {
				s.w.json(ctx, 0, door.Frame(ErrTextTooLarge))
				s.w.closeWith(ctx, websocket.StatusMessageTooBig, ErrTextTooLarge.Name())
			}
			break
		}
		arrival := time.Now()
		s.idle.poke()
		switch {
		case tooLarge:
			s.w.json(ctx, 0, door.Frame(ErrTextTooLarge))
			continue
		case typ == websocket.MessageBinary:
			s.w.json(ctx, 0, door.Frame(ErrBinaryRefused))
			continue
		}
		// The frame and its string copy are held until the utterance is spoken: both count.
		held := 2 * int64(len(data))
		if !s.svc.text.take(held) {
			s.w.json(ctx, 0, door.Frame(ErrTextBudgetFull))
			continue
		}
		s.mu.Lock()
		if s.idled {
			s.mu.Unlock()
			s.svc.text.give(held)
			break // arrived as the socket was closed for idleness
		}
		s.speaking = true
		s.mu.Unlock()
		s.speak(ctx, utterance, string(data), arrival)
		// Written before the next read: reading a client's close makes the library answer it at
		// once, and what was still queued would be lost.
		s.w.flush(ctx)
		s.svc.text.give(held)
		s.mu.Lock()
		s.speaking = false
		stop := s.draining
		s.mu.Unlock()
		s.idle.poke() // idle counts from the end of the utterance
		if stop {
			s.w.closeWith(ctx, websocket.StatusGoingAway, "server shutting down")
			break
		}
	}
	close(stopWatch)
	stopDrain()
	watch.Wait()
	s.w.finish(ctx)
	wg.Wait()
	s.conn.CloseNow()
}

// drain closes an idle socket when shutdown begins (door.WatchDrain); a busy one closes after its
// utterance.
func (s *synthSession) drain(ctx context.Context) {
	s.mu.Lock()
	s.draining = true
	idle := !s.speaking
	s.mu.Unlock()
	if idle {
		s.w.closeWith(ctx, websocket.StatusGoingAway, "server shutting down")
	}
}

// speak says one utterance: a header and its PCM per sentence, then utteranceComplete.
func (s *synthSession) speak(ctx context.Context, utterance int, text string, arrival time.Time) {
	chunks, samples := 0, 0
	pieceStart := arrival
	enc, err := s.newUtteranceEncoder()
	if err != nil {
		s.w.json(ctx, 0, door.Frame(synthesisError(err)))
		return
	}
	err = s.engine.Speak(ctx, kokoro.Request{Text: text, Voice: s.voice, Speed: s.speed}, func(c kokoro.Chunk) error {
		h := synthAudio{Type: "audio", Utterance: utterance, Seq: c.Index, Samples: len(c.PCM),
			DurationMs: samplesMs(len(c.PCM)), Text: c.Text}
		s.svc.speech.ObserveSynthesis(time.Since(pieceStart))
		if chunks == 0 {
			first := sinceMs(arrival)
			h.FirstFrameMs = &first
			s.svc.metrics.firstFrame.WithLabelValues("synthesize").Observe(first / 1000)
		}
		if !s.w.json(ctx, 0, h) || !enc.audio(ctx, c.PCM) {
			return ctx.Err()
		}
		chunks++
		samples += len(c.PCM)
		pieceStart = time.Now()
		return nil
	})
	if ctx.Err() == nil && err == nil {
		err = enc.end(ctx, utterance)
	} else {
		enc.abort()
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.w.json(ctx, 0, door.Frame(synthesisError(err)))
		return
	}
	s.w.json(ctx, 0, synthComplete{Type: "utteranceComplete", Utterance: utterance, Chunks: chunks, DurationMs: samplesMs(samples)})
}
