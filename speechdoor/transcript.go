package speechdoor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/audio/codec"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/squelch"
	"github.com/voiced/voiced/speechcore/whisper"
)

// Defaults of the half-duplex transcript (reference/001).
const (
	DefaultTranscriptLimit = 600 * time.Second // audio pushed into one transcript
	DefaultTranscriptIdle  = 5 * time.Minute   // a transcript not pushed to for this long is reaped
	// DefaultTranscriptGuard: an utterance that ended at least this long before the window's end
	// is committed (its text fixed, its audio freed).
	DefaultTranscriptGuard = time.Second
	// DefaultTranscriptCut: a window that grows past this without a pause is cut at its quietest
	// 20 ms in the 5 s before, so a decode never needs more than one 30 s mel window.
	DefaultTranscriptCut = 24 * time.Second
	transcriptTombLife   = 10 * time.Minute
	transcriptSweepEvery = 30 * time.Second
	// DefaultMaxTranscripts bounds the transcripts open on a node at once (TranscriptDoor.MaxOpen):
	// each holds a squelch, a worker goroutine and up to transcriptBehind + one push of audio, so
	// opening them without end was a way to take the node's memory (all come in under the
	// service token: there is no other client to count them by).
	DefaultMaxTranscripts = 64
	// transcriptBehind: a push is refused while this much admitted audio waits uncommitted. The
	// worker commits at a pause or at Cut (24 s), so a client pushing in real time never has more
	// than ~25 s waiting; one pushing hours at once waits for the decoder instead of piling up
	// (a window holds at most this plus one push: 30 s + 131 s of a 4 MiB push ≈ 10 MB).
	transcriptBehind = 30 * time.Second
	// DefaultTranscriptPushBytes bounds the push bodies a node reads and squelches at once
	// (TranscriptDoor.PushBytes); a push over it is refused transcript_pushes_full before its
	// body is read. A push holds its body, its float32 samples (2×) and what the squelch admits
	// (≤ 2×) until it is answered: at most 5× its body. 16 MiB is four full pushes (4 MiB, 131 s
	// each), or thousands of the 100–500 ms pushes of a client streaming in real time. Before it,
	// pushes were not gated at all: a client sending 4 MiB pushes at once held ~12 MiB each
	// while they queued for the transcript's lock.
	DefaultTranscriptPushBytes = 16 << 20
	// transcriptReadStep: a push of unknown length (chunked) takes its bytes from the node's
	// budget this much at a time, as they arrive.
	transcriptReadStep = 256 << 10
)

// ErrBadTranscriptBody refuses an open whose JSON body does not parse.
var ErrBadTranscriptBody = door.NewRefusal(http.StatusBadRequest, "invalid_json",
	"POST /v1/audio/transcript takes an optional JSON object {\"language\": \"es\"} or ?language=")

// Refusals of /v1/audio/transcript, by name.
var (
	ErrTranscriptNotFound = door.NewRefusal(http.StatusNotFound, "transcript_not_found",
		"no open transcript has this id: open one with POST /v1/audio/transcript")
	// ErrTranscriptNodeGone: the node that held the transcript is gone (it was stopped or died).
	ErrTranscriptNodeGone = door.NewRefusal(http.StatusNotFound, "transcript_not_found",
		"the node that held this transcript is gone, and its audio with it: open a new one with POST /v1/audio/transcript")
	ErrTranscriptClosed = door.NewRefusal(http.StatusConflict, "transcript_closed",
		"this transcript was closed (DELETE); open a new one with POST /v1/audio/transcript")
	ErrTranscriptExpired = door.NewRefusal(http.StatusGone, "transcript_expired",
		"this transcript was idle too long and was closed; open a new one with POST /v1/audio/transcript")
	ErrTranscriptLimit = door.NewRefusal(http.StatusRequestEntityTooLarge, "transcript_limit_reached",
		"a transcript holds at most 600 s of audio: DELETE it for its text and open a new one; this push was not taken")
	ErrTooManyTranscripts = door.NewRefusal(http.StatusTooManyRequests, "too_many_transcripts",
		"this node has as many transcripts open as it holds; close one (DELETE) or retry later").WithRetryAfter(time.Second).WithReason(door.ReasonCap)
	ErrTranscriptBusy = door.NewRefusal(http.StatusConflict, "transcript_busy",
		"another push to this transcript is still being taken: push one at a time, each after the last one's answer; this push was not taken")
	ErrTranscriptPushesFull = door.NewRefusal(http.StatusTooManyRequests, "transcript_pushes_full",
		"this node is taking as much pushed audio as it holds at once; this push was not taken, retry it").WithRetryAfter(time.Second).WithReason(door.ReasonCap)
	ErrTranscriptBehind = door.NewRefusal(http.StatusTooManyRequests, "transcript_behind",
		"the decoder is behind this transcript's audio: push at most in real time; this push was not taken, retry it").WithRetryAfter(time.Second)
)

// TranscriptDoor serves the half-duplex streaming transcript (reference/001):
// POST /v1/audio/transcript opens one, POST /v1/audio/transcript/{id} pushes raw PCM16LE mono
// 16 kHz and answers the text so far and the seconds that push put in front of the decoder,
// DELETE /v1/audio/transcript/{id} closes it, decodes what is left and answers the whole text.
// A Silero squelch sits in front of the decoder: silence is neither decoded nor billed. Each
// transcript's window is re-decoded in the background as it fills, so a push is answered at
// once with whatever text exists.
type TranscriptDoor struct {
	svc *Doors
	// ModelPath is the Silero model (default: the mount's models/silero-vad/silero_vad.onnx).
	ModelPath string
	Limit     time.Duration // default DefaultTranscriptLimit
	Idle      time.Duration // default DefaultTranscriptIdle
	Guard     time.Duration // default DefaultTranscriptGuard
	Cut       time.Duration // default DefaultTranscriptCut, at most 25 s
	MaxOpen   int           // transcripts open at once; default DefaultMaxTranscripts
	// PushBytes bounds the push bodies being taken on the node at once; default
	// DefaultTranscriptPushBytes.
	PushBytes int64
	// Squelch overrides the squelch's thresholds, hang and lead (ModelPath, Model, Env are set here).
	Squelch squelch.Config

	mu        sync.Mutex
	sessions  map[string]*transcript
	tombs     map[string]tomb
	lastSweep time.Time
	model     *squelch.Model // loaded on first open when the service has no Silero model; closed by Shutdown
	closed    bool
	pushing   int64 // bytes of push bodies taken from PushBytes (under mu)
}

type tomb struct {
	why *door.Refusal
	at  time.Time
}

// NewTranscriptDoor returns the door reading its engine and mount from svc.
func NewTranscriptDoor(svc *Doors) *TranscriptDoor {
	return &TranscriptDoor{svc: svc, sessions: map[string]*transcript{}, tombs: map[string]tomb{}}
}

type transcriptAck struct {
	ID       string  `json:"id,omitempty"`
	Text     string  `json:"text"`
	Duration float64 `json:"duration"`
	// Language is the code the text was decoded in: the one the transcript was opened with, or
	// with auto the language last detected ("" before the first decode).
	Language string `json:"language,omitempty"`
}

// transcript is one open session. Its worker goroutine re-decodes the window; the door owns
// the worker and waits for it when the transcript ends.
type transcript struct {
	id     string
	engine transcriber
	cancel context.CancelFunc
	wake   chan struct{} // capacity 1: "the window changed"
	stop   chan struct{}
	done   chan struct{} // closed when the worker has exited
	guard  int           // samples
	cut    int           // samples
	// observe records each decode's pass durations (speechcore.Service.ObserveTranscription).
	observe func(whisper.Result)
	// live decodes pushes of Ogg/WebM Opus (?format=, liveformat.go); nil for raw PCM.
	live *codec.LiveDecoder
	// language is the checked language it was opened with (a code, or whisper.LanguageAuto).
	language string

	// heard is the language the last decode was in (the detected one with auto): a refresh of
	// the open window decodes in it once it is known, so auto detects on commits only (and
	// once before the first, when nothing is known yet). Under mu.
	heard string

	mu         sync.Mutex
	sq         *squelch.Squelch
	taking     bool  // a push is being read or squelched: the next one is refused transcript_busy
	pushed     int64 // samples pushed, squelched or not (the session limit)
	lastUsed   time.Time
	window     []float32 // admitted audio not yet committed; replaced, never reused, on commit
	pauses     []int     // offsets in window where the squelch closed after admitting speech
	inSpeech   bool      // the last push was admitted
	committed  []string
	tentative  string // the window's text as last decoded
	decodedLen int    // len(window) when tentative was decoded
	failed     error  // the last decode failure, logged once
}

func (d *TranscriptDoor) limits() (limit, idle time.Duration, guard, cut int) {
	limit, idle = d.Limit, d.Idle
	if limit <= 0 {
		limit = DefaultTranscriptLimit
	}
	if idle <= 0 {
		idle = DefaultTranscriptIdle
	}
	g, c := d.Guard, d.Cut
	if g <= 0 {
		g = DefaultTranscriptGuard
	}
	if c <= 0 || c > 25*time.Second {
		c = DefaultTranscriptCut
	}
	return limit, idle, int(g.Seconds() * audio.WhisperSampleRate), int(c.Seconds() * audio.WhisperSampleRate)
}

// Open answers POST /v1/audio/transcript.
func (d *TranscriptDoor) Open(w http.ResponseWriter, r *http.Request) {
	engine := d.svc.speech.Whisper
	if engine == nil {
		door.WriteError(w, speechcore.ErrNotWarm)
		return
	}
	format, refusal := liveFormat(r)
	if refusal != nil {
		door.WriteError(w, refusal)
		return
	}
	d.sweep()
	maxOpen := d.MaxOpen
	if maxOpen <= 0 {
		maxOpen = DefaultMaxTranscripts
	}
	if d.openCount() >= maxOpen { // checked again, under the lock, before it is added
		d.svc.countRefusal(ErrTooManyTranscripts)
		door.WriteError(w, ErrTooManyTranscripts)
		return
	}
	language, refusal := transcriptLanguage(r, engine)
	if refusal != nil {
		door.WriteError(w, refusal)
		return
	}
	model, err := d.squelchModel()
	if err != nil {
		d.svc.log.Error("transcript: load squelch", "err", err)
		door.WriteError(w, err)
		return
	}
	cfg := d.Squelch
	cfg.Model, cfg.ModelPath, cfg.Env = model, "", nil
	sq, err := squelch.New(cfg)
	if err != nil {
		d.svc.log.Error("transcript: squelch", "err", err)
		door.WriteError(w, err)
		return
	}
	live, err := newLiveDecoder(format)
	if err != nil {
		sq.Close()
		d.svc.log.Error("transcript: live decoder", "err", err)
		door.WriteError(w, err)
		return
	}
	_, _, guard, cut := d.limits()
	ctx, cancel := context.WithCancel(context.Background())
	t := &transcript{
		id: d.newID(), engine: engine, observe: d.svc.speech.ObserveTranscription, language: language, cancel: cancel, sq: sq, guard: guard, cut: cut, live: live,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		lastUsed: time.Now(),
	}
	d.mu.Lock()
	if d.closed || len(d.sessions) >= maxOpen {
		full := !d.closed
		d.mu.Unlock()
		cancel()
		sq.Close()
		t.closeLive()
		if full {
			d.svc.countRefusal(ErrTooManyTranscripts)
			door.WriteError(w, ErrTooManyTranscripts)
			return
		}
		door.WriteError(w, door.ErrShuttingDown)
		return
	}
	d.sessions[t.id] = t
	d.mu.Unlock()
	go t.work(ctx, d.svc)
	writeJSON(w, http.StatusCreated, map[string]string{"id": t.id, "language": language})
}

// Push answers POST /v1/audio/transcript/{id}.
func (d *TranscriptDoor) Push(w http.ResponseWriter, r *http.Request) {
	if d.forwarded(w, r) {
		return
	}
	d.sweep()
	t, refusal := d.find(r.PathValue("id"))
	if refusal != nil {
		door.WriteError(w, refusal)
		return
	}
	// One push at a time per transcript, and a node-wide budget of push bytes, both before a
	// byte of the body is read: pushes racing for one transcript's lock each held their body
	// and its samples (~12 MiB for a full push) while they waited.
	t.mu.Lock()
	busy := t.taking
	t.taking = true
	t.mu.Unlock()
	if busy {
		door.WriteError(w, ErrTranscriptBusy)
		return
	}
	defer func() {
		t.mu.Lock()
		t.taking = false
		t.mu.Unlock()
	}()
	if r.ContentLength > FrameLimit {
		door.WriteError(w, errPushTooLarge)
		return
	}
	body, held, refusal := d.readPush(r.Body, r.ContentLength)
	defer d.givePush(held)
	if refusal != nil {
		d.svc.countRefusal(refusal) // only the node's budget has a reason to count
		door.WriteError(w, refusal)
		return
	}
	defer d.svc.holdUsage()() // the meter's close waits for this push's seconds
	var pcm []float32
	var err error
	if t.live != nil {
		if pcm, refusal = d.livePush(t, body); refusal != nil {
			door.WriteError(w, refusal)
			return
		}
	} else if pcm, err = audio.PCM16ToFloat32(body); err != nil {
		door.WriteError(w, door.Refuse(ErrOddLengthPCM, "the body must be raw PCM16LE mono 16 kHz, an even number of bytes; it was not taken, earlier audio is kept"))
		return
	}
	limit, _, _, _ := d.limits()
	t.mu.Lock()
	if t.sq == nil { // closed between find and here
		t.mu.Unlock()
		door.WriteError(w, ErrTranscriptClosed)
		return
	}
	if t.pushed+int64(len(pcm)) > int64(limit.Seconds()*audio.WhisperSampleRate) {
		t.mu.Unlock()
		door.WriteError(w, ErrTranscriptLimit)
		return
	}
	if len(t.window) >= int(transcriptBehind.Seconds()*audio.WhisperSampleRate) {
		t.mu.Unlock()
		door.WriteError(w, ErrTranscriptBehind)
		return
	}
	admitted, err := t.sq.Push(pcm)
	if err != nil {
		t.mu.Unlock()
		d.svc.log.Error("transcript: squelch push", "id", t.id, "err", err)
		door.WriteError(w, door.Refuse(ErrTranscriptionFailed, "the squelch failed on this push; it was not taken"))
		return
	}
	t.pushed += int64(len(pcm))
	t.lastUsed = time.Now()
	if len(admitted) > 0 {
		t.window = append(t.window, admitted...)
		t.inSpeech = true
	} else if t.inSpeech {
		t.pauses = append(t.pauses, len(t.window))
		t.inSpeech = false
	}
	text, lang := t.textLocked(), t.heardLocked()
	changed := len(admitted) > 0 || len(t.pauses) > 0
	t.mu.Unlock()
	if changed {
		t.poke()
	}
	heard := squelch.Seconds(len(admitted))
	d.svc.tab(r).heard(heard) // exactly what the ack reports as duration
	writeJSON(w, http.StatusOK, transcriptAck{Text: text, Duration: heard, Language: lang})
}

// errPushTooLarge refuses a push body over FrameLimit, declared or read.
var errPushTooLarge = door.Refuse(ErrFrameTooLarge, "a push may carry at most 4 MiB; it was not taken, earlier audio is kept")

// readPush reads a push's body, taking its bytes from the node's PushBytes first: all of
// size when the client declared it (≥ 0), else transcriptReadStep at a time as they arrive.
// held is what was taken (give it back with givePush, refused or not). A body over FrameLimit is
// errPushTooLarge.
func (d *TranscriptDoor) readPush(body io.Reader, size int64) (data []byte, held int64, refusal *door.Refusal) {
	if size >= 0 {
		if !d.takePush(size) {
			return nil, 0, ErrTranscriptPushesFull
		}
		data = make([]byte, size)
		if _, err := io.ReadFull(body, data); err != nil {
			return nil, size, door.Refuse(ErrBadForm, "reading the body failed: "+err.Error())
		}
		return data, size, nil
	}
	for {
		if int64(len(data)) == held {
			step := min(transcriptReadStep, FrameLimit+1-held)
			if step <= 0 {
				return nil, held, errPushTooLarge
			}
			if !d.takePush(step) {
				return nil, held, ErrTranscriptPushesFull
			}
			held += step
			data = slices.Grow(data, int(step))
		}
		n, err := body.Read(data[len(data):held])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, held, door.Refuse(ErrBadForm, "reading the body failed: "+err.Error())
		}
	}
	if len(data) > FrameLimit {
		return nil, held, errPushTooLarge
	}
	return data, held, nil
}

// takePush takes n bytes from the node's push budget; false (nothing taken) when they do not fit.
func (d *TranscriptDoor) takePush(n int64) bool {
	limit := d.PushBytes
	if limit <= 0 {
		limit = DefaultTranscriptPushBytes
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pushing+n > limit {
		return false
	}
	d.pushing += n
	return true
}

func (d *TranscriptDoor) givePush(n int64) {
	d.mu.Lock()
	d.pushing -= n
	d.mu.Unlock()
}

// Close answers DELETE /v1/audio/transcript/{id}: no more pushes, the rest of the window is
// decoded, and the whole text is answered. duration is 0: a close puts no new audio before the
// decoder (the squelch's held lead is silence and is dropped).
func (d *TranscriptDoor) Close(w http.ResponseWriter, r *http.Request) {
	if d.forwarded(w, r) {
		return
	}
	id := r.PathValue("id")
	t, refusal := d.find(id)
	if refusal != nil {
		door.WriteError(w, refusal)
		return
	}
	d.mu.Lock()
	if d.sessions[id] != t { // a concurrent DELETE won
		d.mu.Unlock()
		door.WriteError(w, ErrTranscriptClosed)
		return
	}
	delete(d.sessions, id)
	d.tombs[id] = tomb{why: ErrTranscriptClosed, at: time.Now()}
	d.mu.Unlock()
	text, err := t.finish(r.Context(), d.svc)
	if err != nil {
		door.WriteError(w, err)
		return
	}
	t.mu.Lock()
	lang := t.heardLocked()
	t.mu.Unlock()
	writeJSON(w, http.StatusOK, transcriptAck{Text: text, Duration: 0, Language: lang})
}

// Shutdown ends every open transcript without decoding further and releases the squelch model.
func (d *TranscriptDoor) Shutdown() {
	d.mu.Lock()
	d.closed = true
	open := d.sessions
	d.sessions = map[string]*transcript{}
	d.mu.Unlock()
	for _, t := range open {
		t.end()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.model != nil {
		d.model.Close()
		d.model = nil
	}
}

// openCount is the number of open transcripts (voiced_transcripts_open).
func (d *TranscriptDoor) openCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.sessions)
}

func (d *TranscriptDoor) find(id string) (*transcript, *door.Refusal) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.sessions[id]; ok {
		return t, nil
	}
	if tb, ok := d.tombs[id]; ok {
		return nil, tb.why
	}
	return nil, ErrTranscriptNotFound
}

func (d *TranscriptDoor) squelchModel() (*squelch.Model, error) {
	if d.ModelPath == "" && d.svc.speech.Silero != nil {
		return d.svc.speech.Silero, nil // the service's shared model; the service closes it
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.model != nil {
		return d.model, nil
	}
	path := d.ModelPath
	if path == "" {
		if d.svc.speech.Mount == nil {
			return nil, speechcore.ErrNotMounted
		}
		path = d.svc.speech.Mount.Path(assets.SileroModel)
	}
	m, err := squelch.Load(d.svc.speech.Env, path)
	if err != nil {
		return nil, fmt.Errorf("load squelch model: %w", err)
	}
	d.model = m
	return m, nil
}

// sweep reaps idle transcripts and forgets old tombstones, at most every transcriptSweepEvery.
func (d *TranscriptDoor) sweep() {
	_, idle, _, _ := d.limits()
	now := time.Now()
	var reaped []*transcript
	d.mu.Lock()
	if now.Sub(d.lastSweep) < transcriptSweepEvery && d.lastSweep.After(time.Time{}) {
		d.mu.Unlock()
		return
	}
	d.lastSweep = now
	for id, t := range d.sessions {
		t.mu.Lock()
		idleFor := now.Sub(t.lastUsed)
		t.mu.Unlock()
		if idleFor > idle {
			delete(d.sessions, id)
			d.tombs[id] = tomb{why: ErrTranscriptExpired, at: now}
			reaped = append(reaped, t)
		}
	}
	for id, tb := range d.tombs {
		if now.Sub(tb.at) > transcriptTombLife {
			delete(d.tombs, id)
		}
	}
	d.mu.Unlock()
	for _, t := range reaped {
		t.end()
	}
}

// newID is a fresh transcript id: tr_<node>.<hex> when the service has Peers (so any node can
// find the owner), tr_<hex> otherwise.
func (d *TranscriptDoor) newID() string {
	node := ""
	if p := d.svc.cfg.Peers; p != nil {
		node = p.NodeID()
	}
	return door.NewID("tr_", node, 16)
}

// forwarded hands a request for another node's transcript to that node (door.Forwarded) and
// reports whether it did; a request a peer forwarded to a node that is not the owner is answered
// transcript_not_found.
func (d *TranscriptDoor) forwarded(w http.ResponseWriter, r *http.Request) bool {
	return door.Forwarded(d.svc.cfg.Peers, w, r, "tr_", r.PathValue("id"), ErrTranscriptNotFound)
}

func (t *transcript) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// textLocked is the text so far: every committed piece, then the window's latest decode.
func (t *transcript) textLocked() string {
	parts := append([]string(nil), t.committed...)
	if t.tentative != "" {
		parts = append(parts, t.tentative)
	}
	return strings.Join(parts, " ")
}

// work is the transcript's decoder: it catches up each time the window changes.
func (t *transcript) work(ctx context.Context, svc *Doors) {
	defer close(t.done)
	for {
		select {
		case <-t.wake:
		case <-t.stop:
			return
		}
		if err := t.catchUp(ctx, false); err != nil && ctx.Err() == nil {
			logDecodeFailure(svc.log, "transcript: decode", err, "id", t.id)
		}
	}
}

// end stops the worker (cancelling a decode in flight) and releases the squelch.
func (t *transcript) end() {
	t.cancel()
	t.stopWorker()
	t.mu.Lock()
	if t.sq != nil {
		t.sq.Close()
		t.sq = nil
	}
	t.mu.Unlock()
	t.closeLive()
}

// closeLive frees the live decoder (it waits for a push decoding with it).
func (t *transcript) closeLive() {
	if t.live != nil {
		t.live.Close()
	}
}

func (t *transcript) stopWorker() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
}

// finish stops the worker after its current decode, then decodes the rest of the window on the
// caller's goroutine and returns the whole text.
func (t *transcript) finish(ctx context.Context, svc *Doors) (string, error) {
	t.stopWorker()
	t.mu.Lock()
	if t.sq != nil {
		t.sq.Close()
		t.sq = nil
	}
	t.mu.Unlock()
	t.closeLive()
	defer t.cancel()
	if err := t.catchUp(ctx, true); err != nil {
		logDecodeFailure(svc.log, "transcript: flush", err, "id", t.id)
		return "", transcriptionError(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.textLocked(), nil
}

// catchUp decodes until the window's text is current: it commits utterances that ended a guard
// before the window's end, cuts an over-long window at its quietest point, and re-decodes the
// rest. With flush it commits everything.
func (t *transcript) catchUp(ctx context.Context, flush bool) error {
	for {
		t.mu.Lock()
		commitAt, pcm := t.nextLocked(flush)
		t.mu.Unlock()
		if pcm == nil {
			return nil
		}
		text := ""
		if len(pcm) > 0 {
			t.mu.Lock()
			known := t.heard
			t.mu.Unlock()
			// A commit is a final (auto detects); a refresh of the open window reuses what was
			// last detected (hearingOptions.request).
			res, err := t.engine.TranscribeAs(ctx, pcm, hearingOptions{language: t.language}.request(commitAt > 0, known))
			if err != nil {
				return err
			}
			if t.observe != nil {
				t.observe(res)
			}
			text = strings.TrimSpace(res.Text)
			t.mu.Lock()
			t.heard = res.Language
			t.mu.Unlock()
		}
		t.mu.Lock()
		if commitAt > 0 {
			if text != "" {
				t.committed = append(t.committed, text)
			}
			t.window = append([]float32(nil), t.window[commitAt:]...)
			kept := t.pauses[:0:0]
			for _, p := range t.pauses {
				if p > commitAt {
					kept = append(kept, p-commitAt)
				}
			}
			t.pauses = kept
			t.tentative, t.decodedLen = "", 0
		} else {
			t.tentative, t.decodedLen = text, len(pcm)
		}
		t.mu.Unlock()
	}
}

// heardLocked is the language the text is in: the one told, or the last detected with auto.
func (t *transcript) heardLocked() string {
	if t.language != whisper.LanguageAuto {
		return t.language
	}
	return t.heard
}

// transcriptLanguage reads the language POST /v1/audio/transcript is opened with: ?language= or
// a JSON body's "language" (the query wins), checked against the mounted model ("" = the
// server's default, auto = detected on each commit).
func transcriptLanguage(r *http.Request, engine languageChecker) (string, *door.Refusal) {
	lang := r.URL.Query().Get("language")
	if lang == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			Language string `json:"language"`
		}
		raw, err := io.ReadAll(io.LimitReader(r.Body, 4<<10))
		if err == nil && len(bytes.TrimSpace(raw)) > 0 {
			if err := json.Unmarshal(raw, &body); err != nil {
				return "", door.Refuse(ErrBadTranscriptBody, "the body must be a JSON object such as {\"language\":\"es\"} (at most 4 KiB): "+err.Error())
			}
		}
		lang = body.Language
	}
	code, err := engine.CheckLanguage(lang)
	if err != nil {
		return "", languageRefusal(err)
	}
	return code, nil
}

// nextLocked picks the next decode: (commitAt > 0, window[:commitAt]) commits, (0, window)
// refreshes the tentative text, (0, nil) means nothing to do.
func (t *transcript) nextLocked(flush bool) (int, []float32) {
	n := len(t.window)
	if n == 0 {
		return 0, nil
	}
	if flush {
		// No more audio comes: every pause is final, whatever the guard.
		for _, p := range t.pauses {
			if p > 0 && p < n {
				return p, t.window[:p:p]
			}
		}
		if t.decodedLen == n {
			// The last decode covered the whole window: commit it without decoding again.
			if t.tentative != "" {
				t.committed = append(t.committed, t.tentative)
			}
			t.window, t.pauses, t.tentative, t.decodedLen = nil, nil, "", 0
			return 0, nil
		}
		end := min(n, audio.WhisperSamples)
		return end, t.window[:end:end]
	}
	for _, p := range t.pauses {
		if p > 0 && n-p >= t.guard {
			return p, t.window[:p:p]
		}
	}
	if n >= t.cut {
		c := quietestCut(t.window, t.cut)
		return c, t.window[:c:c]
	}
	if n != t.decodedLen {
		return 0, t.window[:n:n]
	}
	return 0, nil
}

// quietestCut returns the start of the quietest 20 ms frame in the 5 s before limit, so a forced
// cut falls between words where it can.
func quietestCut(pcm []float32, limit int) int {
	const frame = audio.WhisperSampleRate / 50
	lo := max(frame, limit-5*audio.WhisperSampleRate)
	best, bestEnergy := limit, math.Inf(1)
	for start := lo; start+frame <= limit; start += frame {
		var e float64
		for _, v := range pcm[start : start+frame] {
			e += float64(v) * float64(v)
		}
		if e < bestEnergy {
			best, bestEnergy = start, e
		}
	}
	return best
}
