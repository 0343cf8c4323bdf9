package speechdoor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/codec"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/whisper"
)

// Defaults of WS /v1/transcribe (reference/000).
const (
	DefaultPartialCadence = time.Second
	DefaultSegmentMax     = 30 * time.Second
	// FrameLimit is the largest frame a door reads (4 MiB).
	FrameLimit = 4 << 20
	// frameDrainLimit bounds what is read and thrown away of an oversize frame before the socket
	// is closed instead.
	frameDrainLimit    = 64 << 20
	socketWriteTimeout = 10 * time.Second
)

// Refusals of WS /v1/transcribe, by name.
var (
	ErrUnknownMessage = door.NewRefusal(http.StatusBadRequest, "unknown_message",
		`the only text frame this door reads is {"type":"end"}; audio goes in binary frames (PCM16LE, mono, 16 kHz)`)
	ErrUnmaskedFrame = door.NewRefusal(http.StatusBadRequest, "unmasked_frame",
		"a client must mask every frame it sends (RFC 6455 §5.1); the socket is closed")
	ErrProtocol = door.NewRefusal(http.StatusBadRequest, "protocol_error",
		"the WebSocket framing is broken; the socket is closed")
)

// transcriber is what the speech-to-text doors need of Whisper (*whisper.Engine).
type transcriber interface {
	TranscribeAs(ctx context.Context, pcm16k []float32, req whisper.Request) (whisper.Result, error)
	ModelID() string
}

// TranscribeDoor serves WS /v1/transcribe: PCM16LE mono 16 kHz binary frames in, ready, partial
// and final deltas and named errors out.
type TranscribeDoor struct {
	svc            *Doors
	PartialCadence time.Duration // default DefaultPartialCadence
	SegmentMax     time.Duration // default DefaultSegmentMax, at most 30 s
	// IdleTimeout closes a socket that sent no frame for this long while no final was being
	// decoded for it: the open segment's final is sent first (default: Config.SocketIdle).
	IdleTimeout time.Duration
}

// NewTranscribeDoor returns the door reading its engine, gate and socket registry from svc.
func NewTranscribeDoor(svc *Doors) *TranscribeDoor {
	return &TranscribeDoor{svc: svc, PartialCadence: DefaultPartialCadence, SegmentMax: DefaultSegmentMax, IdleTimeout: svc.cfg.SocketIdle}
}

type readyFrame struct {
	Type              string `json:"type"`
	ModelID           string `json:"modelId"`
	Language          string `json:"language"`
	SampleRate        int    `json:"sampleRate"`
	Encoding          string `json:"encoding"`
	Channels          int    `json:"channels"`
	PartialCadenceMs  int64  `json:"partialCadenceMs"`
	SegmentMaxMs      int64  `json:"segmentMaxMs"`
	Device            string `json:"device"`
	ExecutionProvider string `json:"executionProvider"`
}

type deltaFrame struct {
	Type    string `json:"type"`
	Segment int    `json:"segment"`
	Kind    string `json:"kind"` // partial or final
	Text    string `json:"text"`
	// Language is the language a final was decoded in (detected with ?language=auto).
	Language string `json:"language,omitempty"`
	// Segments are a final's timed segments (?timestamps=true), in seconds from the stream's start.
	Segments []segmentJSON `json:"segments,omitempty"`
	// Logprobs are a final's token log-probabilities (?logprobs=true).
	Logprobs     []logprobJSON `json:"logprobs,omitempty"`
	T0Ms         float64       `json:"t0Ms"`
	T1Ms         float64       `json:"t1Ms"`
	DecodeMs     float64       `json:"decodeMs"`
	FirstTokenMs *float64      `json:"firstTokenMs,omitempty"`
}

// closeFrame asks the writer to close the socket once everything before it is written.
type closeFrame struct {
	code   websocket.StatusCode
	reason string
}

func (d *TranscribeDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	engine := d.svc.speech.Whisper
	if engine == nil {
		d.svc.refuse(w, speechcore.ErrNotWarm)
		return
	}
	hearing, refusal := hearingFromQuery(r, engine)
	if refusal != nil {
		d.svc.refuse(w, refusal)
		return
	}
	format, refusal := liveFormat(r)
	if refusal != nil {
		d.svc.refuse(w, refusal)
		return
	}
	ctx, conn, done, ok := d.svc.admitSocket(w, r)
	if !ok {
		return // refused by name already
	}
	defer done()
	defer d.svc.opened("transcribe")()
	defer d.svc.holdUsage()() // the meter's close waits for this door's last seconds
	cadence, segMax := d.PartialCadence, d.SegmentMax
	if cadence <= 0 {
		cadence = DefaultPartialCadence
	}
	if segMax <= 0 || segMax > DefaultSegmentMax {
		segMax = DefaultSegmentMax
	}
	s := &transcribeSession{
		conn:           conn,
		engine:         engine,
		hearing:        hearing,
		log:            d.svc.log,
		heard:          d.svc.tab(r).heard,
		svc:            d.svc,
		cadenceSamples: int(cadence.Seconds() * audio.WhisperSampleRate),
		segMaxSamples:  int(segMax.Seconds() * audio.WhisperSampleRate),
		w:              door.NewWriter(door.WriterConfig{Queue: 32, Timeout: socketWriteTimeout}),
		finals:         make(chan sttJob, 4),
		partial:        make(chan sttJob, 1),
	}
	live, err := newLiveDecoder(format)
	if err != nil {
		d.svc.log.Error("transcribe: live decoder", "err", err)
		conn.Close(websocket.StatusInternalError, "live decoder")
		return
	}
	s.live = live
	s.idle = newIdleWatch(d.IdleTimeout, func() bool { return s.finalsPending.Load() > 0 })
	device, provider := "cpu", "cpu"
	if d.svc.speech.Env != nil {
		device, provider = d.svc.speech.Env.Device(), d.svc.speech.Env.ExecutionProvider()
	}
	s.run(ctx, d.svc.Sockets.Draining(), readyFrame{
		Type: "ready", ModelID: engine.ModelID(), Language: hearing.language, SampleRate: audio.WhisperSampleRate,
		Encoding: liveEncoding(format), Channels: 1, PartialCadenceMs: cadence.Milliseconds(), SegmentMaxMs: segMax.Milliseconds(),
		Device: device, ExecutionProvider: provider,
	})
}

// sttJob is one decode of a segment's audio from its first sample.
type sttJob struct {
	segment    int
	final      bool
	pcm        []float32 // never written after the job is made
	t0, t1     int64     // stream sample offsets
	firstAudio time.Time
	done       chan struct{} // closed when the delta is handed to the writer (drain only)
}

// transcribeSession is one socket. The read loop (run/read) owns it: it starts the writer and
// the decoder and waits for both before returning.
type transcribeSession struct {
	conn           *websocket.Conn
	engine         transcriber
	hearing        hearingOptions
	log            *slog.Logger
	heard          func(seconds float64) // the meter: each frame taken; may be nil
	live           *codec.LiveDecoder    // ?format=webm|ogg (liveformat.go); nil: raw PCM frames
	svc            *Doors                // metrics; may be nil
	cadenceSamples int
	segMaxSamples  int

	w       *door.Writer // the socket's writer; finished by run after the decoder exits
	finals  chan sttJob  // segment ends, in order; closed by run after the read loop
	partial chan sttJob  // the latest partial wanted; a newer one replaces it

	idle          *idleWatch   // poked by every frame and every final sent
	finalsPending atomic.Int64 // finals queued or being decoded: the socket is not idle

	// Segment state: written by the read loop and, once, by the drain watcher.
	mu          sync.Mutex
	closed      bool // no more audio is taken (drain or end of the read loop)
	segment     int
	seg         []float32 // the open segment; replaced, never reused, when it ends
	segStart    int64
	newSamples  int // since the last partial was asked for
	firstAudio  time.Time
	streamTotal int64

	// Owned by the decoder goroutine.
	firstSent bool
	mel       *audio.MelStream // the open segment's log-mel, when the engine takes features
	melSeg    int              // the segment mel holds
	melBuf    []float32
	language  string // the language the last final was decoded in (partials of "auto" use it)
}

// melTranscriber is a transcriber that also decodes precomputed features (*whisper.Engine): the
// decoder then keeps the open segment's log-mel and computes only the frames new since the last
// partial (audio.MelStream) instead of the whole 30 s window each time.
type melTranscriber interface {
	TranscribeMelAs(ctx context.Context, mel []float32, req whisper.Request) (whisper.Result, error)
	NumMels() int
}

// transcribe decodes one job's audio, through the segment's incremental mel when the engine
// takes features. A segment only grows until it ends, so a job's pcm extends what mel holds.
func (s *transcribeSession) transcribe(ctx context.Context, j sttJob) (whisper.Result, error) {
	req := s.hearing.request(j.final, s.language)
	me, ok := s.engine.(melTranscriber)
	if !ok || len(j.pcm) > audio.WhisperSamples {
		return s.engine.TranscribeAs(ctx, j.pcm, req)
	}
	if s.mel == nil {
		s.mel = audio.NewMelStream(me.NumMels())
	}
	if s.melSeg != j.segment || s.mel.Len() > len(j.pcm) {
		s.mel.Reset()
		s.melSeg = j.segment
	}
	s.mel.Append(j.pcm[s.mel.Len():])
	s.melBuf = s.mel.Compute(s.melBuf)
	return me.TranscribeMelAs(ctx, s.melBuf, req)
}

func (s *transcribeSession) run(ctx context.Context, draining <-chan struct{}, ready readyFrame) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var writerDone, decoderDone sync.WaitGroup
	writerDone.Add(1)
	go func() {
		defer writerDone.Done()
		if s.w.Run(ctx, s.conn) != nil { // the client is gone or stuck: stop the session
			cancel()
		}
	}()
	decoderDone.Add(1)
	go func() { defer decoderDone.Done(); s.decode(ctx) }()
	stopWatch := make(chan struct{})
	var watchDone sync.WaitGroup
	watchDone.Add(1)
	stopDrain := door.WatchDrain(ctx, draining, func() { s.drain(ctx) })
	go func() { defer watchDone.Done(); s.idle.run(ctx, stopWatch, func() bool { return s.closeIdle(ctx) }) }()

	s.send(ctx, ready)
	code, reason := s.read(ctx)

	close(stopWatch)
	stopDrain()
	watchDone.Wait()
	close(s.finals)
	decoderDone.Wait()
	if code != 0 {
		s.send(ctx, closeFrame{code: code, reason: reason})
	}
	s.w.Finish(ctx)
	writerDone.Wait()
	s.conn.CloseNow()
}

// send hands a frame to the writer (JSON, or a closeFrame); it gives up when the session is
// cancelled.
func (s *transcribeSession) send(ctx context.Context, frame any) {
	if c, ok := frame.(closeFrame); ok {
		s.w.Close(ctx, c.code, c.reason)
		return
	}
	data, err := json.Marshal(frame)
	if err != nil {
		s.log.Error("transcribe: encode frame", "err", err)
		return
	}
	s.w.Send(ctx, door.Message{Type: websocket.MessageText, Data: data})
}

// read is the read loop. It returns the close status to send, or 0 when the client closed.
func (s *transcribeSession) read(ctx context.Context) (websocket.StatusCode, string) {
	defer s.endStream(ctx)
	defer s.endLive(ctx)
	for {
		typ, data, err := door.ReadFrame(ctx, s.conn, FrameLimit, frameDrainLimit)
		s.idle.poke()
		switch {
		case errors.Is(err, door.ErrFrameTooLarge):
			s.send(ctx, door.Frame(ErrFrameTooLarge))
			continue
		case errors.Is(err, door.ErrFrameOverDrain):
			s.send(ctx, door.Frame(ErrFrameTooLarge))
			return websocket.StatusMessageTooBig, ErrFrameTooLarge.Name()
		case err != nil:
			return s.readFailed(ctx, err)
		}
		switch typ {
		case websocket.MessageBinary:
			if s.live != nil {
				if code, reason, stop := s.takeLive(ctx, data); stop {
					return code, reason
				}
				continue
			}
			if len(data)%2 != 0 {
				s.send(ctx, door.Frame(ErrOddLengthPCM))
				continue
			}
			pcm, err := audio.PCM16ToFloat32(data)
			if err != nil {
				s.send(ctx, door.Frame(ErrOddLengthPCM))
				continue
			}
			if !s.take(ctx, pcm) {
				return 0, "" // draining: the watcher closes the socket
			}
		case websocket.MessageText:
			var msg struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(data, &msg) != nil || msg.Type != "end" {
				s.send(ctx, door.Frame(ErrUnknownMessage))
				continue
			}
			s.endSegment(ctx)
		}
	}
}

// readFailed classifies a read error: the client closed or went away (decode what is left and
// try to send it), the session was cancelled, or the framing broke (a named error, then close).
func (s *transcribeSession) readFailed(ctx context.Context, err error) (websocket.StatusCode, string) {
	if ctx.Err() != nil || websocket.CloseStatus(err) != -1 || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, ""
	}
	refusal := ErrProtocol
	// coder/websocket has no sentinel for this; its text is the only signal it gives.
	if strings.Contains(err.Error(), "unmasked frame") {
		refusal = ErrUnmaskedFrame
	}
	s.send(ctx, door.Frame(refusal))
	return websocket.StatusProtocolError, refusal.Name()
}

// take appends audio to the open segment, ending it at the segment limit and asking for a
// partial every cadence of new audio. It reports false once the session takes no more audio.
func (s *transcribeSession) take(ctx context.Context, pcm []float32) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	if s.firstAudio.IsZero() && len(pcm) > 0 {
		s.firstAudio = time.Now()
	}
	taken := len(pcm)
	var finals []sttJob
	for len(pcm) > 0 {
		room := s.segMaxSamples - len(s.seg)
		n := min(room, len(pcm))
		s.seg = append(s.seg, pcm[:n]...)
		s.newSamples += n
		s.streamTotal += int64(n)
		pcm = pcm[n:]
		if len(s.seg) == s.segMaxSamples {
			finals = append(finals, s.cutLocked())
		}
	}
	var partial *sttJob
	if s.newSamples >= s.cadenceSamples && len(s.seg) > 0 {
		s.newSamples = 0
		j := s.jobLocked(false)
		partial = &j
	}
	s.mu.Unlock()
	if s.heard != nil && taken > 0 {
		// Every frame taken is metered before the decoder sees it, durably (it waits for the
		// write: outside the lock, so the decoders are not held up by the store).
		s.heard(float64(taken) / audio.WhisperSampleRate)
	}
	for _, j := range finals {
		if !s.queueFinal(ctx, j) {
			return false
		}
	}
	if partial != nil {
		select { // the newest partial replaces one not yet started
		case <-s.partial:
		default:
		}
		select {
		case s.partial <- *partial:
		default:
		}
	}
	return true
}

func (s *transcribeSession) jobLocked(final bool) sttJob {
	return sttJob{
		segment: s.segment, final: final, pcm: s.seg[:len(s.seg):len(s.seg)],
		t0: s.segStart, t1: s.segStart + int64(len(s.seg)), firstAudio: s.firstAudio,
	}
}

// cutLocked ends the open segment and starts the next one on a fresh buffer (a decode may still
// be reading the old one).
func (s *transcribeSession) cutLocked() sttJob {
	j := s.jobLocked(true)
	s.segment++
	s.segStart += int64(len(s.seg))
	s.seg = nil
	s.newSamples = 0
	return j
}

// endSegment answers {"type":"end"}: the open segment's final, even when it is empty.
func (s *transcribeSession) endSegment(ctx context.Context) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	j := s.cutLocked()
	s.mu.Unlock()
	s.queueFinal(ctx, j)
}

// endStream closes the segment state at the end of the read loop; audio not yet finalised is
// decoded (a client that closes mid-utterance still gets its words).
func (s *transcribeSession) endStream(ctx context.Context) {
	if j, ok := s.stopTaking(false); ok && j != nil {
		s.queueFinal(ctx, *j) // the decoder is still running; run closes finals after this
	}
}

// stopTaking closes the segment state: no more audio is taken. It returns the open segment's
// final, cut, when it holds audio (or always, with empty), else nil; ok is false, and nothing is
// cut, when the session was closed already (drain, idle or the end of the read loop).
func (s *transcribeSession) stopTaking(empty bool) (final *sttJob, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	s.closed = true
	if !empty && len(s.seg) == 0 {
		return nil, true
	}
	j := s.cutLocked()
	return &j, true
}

// sendFinal queues a final and waits until the decoder has sent it; false when ctx ended first.
func (s *transcribeSession) sendFinal(ctx context.Context, j sttJob) bool {
	j.done = make(chan struct{})
	if !s.queueFinal(ctx, j) {
		return false
	}
	select {
	case <-j.done:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *transcribeSession) queueFinal(ctx context.Context, j sttJob) bool {
	s.finalsPending.Add(1)
	select {
	case s.finals <- j:
		return true
	case <-ctx.Done():
		s.finalsPending.Add(-1)
		return false
	}
}

// closeIdle ends a socket that was idle: the open segment's final, when it holds audio, is
// decoded and sent (the client paid for it), then an idle_timeout error and a 1008 close.
func (s *transcribeSession) closeIdle(ctx context.Context) bool {
	j, ok := s.stopTaking(false)
	if !ok {
		return true // draining or ended: someone else closes
	}
	if j != nil && !s.sendFinal(ctx, *j) {
		return true
	}
	s.send(ctx, door.Frame(ErrIdleTimeout))
	s.send(ctx, closeFrame{code: websocket.StatusPolicyViolation, reason: ErrIdleTimeout.Name()})
	return true
}

// drain finishes the session when the server begins shutting down (door.WatchDrain): the open
// segment's final is decoded and sent, then the writer closes the socket with StatusGoingAway.
func (s *transcribeSession) drain(ctx context.Context) {
	j, ok := s.stopTaking(true)
	if !ok || !s.sendFinal(ctx, *j) {
		return
	}
	s.send(ctx, closeFrame{code: websocket.StatusGoingAway, reason: door.ErrShuttingDown.Name()})
}

// decode is the session's decoder: finals first and in order, then the newest partial.
func (s *transcribeSession) decode(ctx context.Context) {
	finalized := -1 // the last segment whose final was sent
	for {
		select {
		case j, ok := <-s.finals:
			if !ok {
				return
			}
			s.deliverFinal(ctx, j)
			finalized = j.segment
			continue
		default:
		}
		select {
		case j, ok := <-s.finals:
			if !ok {
				return
			}
			s.deliverFinal(ctx, j)
			finalized = j.segment
		case j := <-s.partial:
			if j.segment > finalized {
				s.deliver(ctx, j)
			}
		case <-ctx.Done():
			return
		}
	}
}

// deliverFinal delivers a final; the idle period starts again once it is sent.
func (s *transcribeSession) deliverFinal(ctx context.Context, j sttJob) {
	s.deliver(ctx, j)
	s.finalsPending.Add(-1)
	s.idle.poke()
}

// deliver decodes one job and hands its delta (or a named error) to the writer.
func (s *transcribeSession) deliver(ctx context.Context, j sttJob) {
	if j.done != nil {
		defer close(j.done)
	}
	start := time.Now()
	var text string
	var res whisper.Result
	if len(j.pcm) > 0 {
		var err error
		res, err = s.transcribe(ctx, j)
		if err == nil && s.svc != nil {
			s.svc.speech.ObserveTranscription(res)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logDecodeFailure(s.log, "transcribe: decode", err, "segment", j.segment, "final", j.final)
			s.send(ctx, door.Frame(transcriptionError(err)))
			return
		}
		text = res.Text
	}
	end := time.Now()
	kind := "partial"
	if j.final {
		kind = "final"
	}
	delta := deltaFrame{
		Type: "delta", Segment: j.segment, Kind: kind, Text: text,
		T0Ms: samplesToMs(j.t0), T1Ms: samplesToMs(j.t1), DecodeMs: durationMs(end.Sub(start)),
	}
	if j.final {
		if res.Language != "" {
			s.language = res.Language
		}
		delta.Language = s.language
		if delta.Language == "" && s.hearing.language != whisper.LanguageAuto {
			delta.Language = s.hearing.language
		}
		if s.hearing.timestamps {
			delta.Segments = segmentsJSON(res.Segments, float64(j.t0)/audio.WhisperSampleRate, 0)
		}
		if s.hearing.logprobs {
			delta.Logprobs = logprobsJSON(res.Logprobs)
		}
	}
	if !s.firstSent {
		s.firstSent = true
		if !j.firstAudio.IsZero() {
			ft := durationMs(end.Sub(j.firstAudio))
			delta.FirstTokenMs = &ft
			if s.svc != nil {
				s.svc.metrics.firstToken.Observe(end.Sub(j.firstAudio).Seconds())
			}
		}
	}
	s.send(ctx, delta)
}

func samplesToMs(n int64) float64 { return float64(n) * 1000 / audio.WhisperSampleRate }

func durationMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
