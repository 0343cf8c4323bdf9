package session

import (
	"fmt"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// hearRate is the rate turn detection, the squelch and Whisper hear at; the session's timeline
// counts samples at it.
const hearRate = 16000

// speakRate is the rate the Voice speaks at and a Player plays.
const speakRate = 24000

// codecOf is the audio encoding of a session audio format.
func codecOf(f wire.AudioFormat) audio.Encoding {
	switch f {
	case wire.G711Ulaw:
		return audio.Mulaw
	case wire.G711Alaw:
		return audio.Alaw
	}
	return audio.PCM16
}

// minCommitMs is the least audio a commit takes (OpenAI's rule, docs §9).
const minCommitMs = 100

// maxInputAudio bounds the input audio buffer (ms): the audio a conversation holds before it is
// committed. It is what one user turn may carry. Whisper hears 30 s at a time, so a turn this long
// is four windows decoded before its reply can start, and a partial reads only its last 30 s; a
// spoken turn is seconds long and a monologue about a minute, so a turn past 2 min is an open
// microphone or noise the detector reads as speech (a television). At pcm16 24 kHz it holds
// 5.5 MiB of the client's bytes and 7.3 MiB of 16 kHz float32: 12.8 MiB, where --session-limit
// alone let one conversation buffer an hour (~400 MB). Past it: without turn detection the
// append is refused (input_audio_buffer_full, nothing buffered is lost: commit or clear makes
// room); under a detector the turn ends at the bound as if the speaker had stopped
// (speech_stopped, committed, a reply with create_response), and speech that goes on starts a
// new turn.
const maxInputAudio = 2 * 60 * 1000 // ms

// codeInputBufferFull names the refusal of an append past maxInputAudio; codeAudioTooLong that
// of a conversation.item.create whose audio, to be transcribed, is longer than it.
const (
	codeInputBufferFull = "input_audio_buffer_full"
	codeAudioTooLong    = "input_audio_too_long"
)

// hearStep is the most audio (ms) the input pipeline takes in one step: an append is heard in
// steps of it, so that one large append (up to 16 MiB: 26 min of G.711) is never decoded whole,
// and under a detector the buffer's bound is checked between steps.
const hearStep = 1000 // ms

// inputSide is the input goroutine's part (run): client events and input audio are handled
// there, one at a time. It holds the session config, the input pipeline (the buffer, the turn
// detector, the squelch), the turn in progress (its item, partials, speculation), idle_timeout_ms's
// clock and the client's limits. Its own methods send nothing: they return what the
// conversation is to send and do (heard, takeFloor's event, yielded).
type inputSide struct {
	dialect     wire.Dialect
	sessionSeen bool // a session.update decided the dialect
	sess        wire.Session
	input       inputBuffer
	detector    turn.Detector // nil without turn detection
	detectBase  int64         // timeline sample (16 kHz) of the detector's first feed: its positions count from here
	squelch     Squelch
	speechItem  string // the user item named by speech_started, until committed
	partials    partials
	spec        *speculation // the held turn's speculative reply (speculate.go); nil when none
	pending     *pending     // speech during a reply, not yet judged an interruption (interrupt.go)
	onset       bool         // a reply paused on a run of speech not yet a turn (turn.Onset; interrupt.go)
	onsetLost   int64        // where that run broke (turn.OnsetLost); -1 while it runs
	itemAudio   int64        // 16 kHz samples handed over in conversation.item.create (toward the session limit)
	// idleArmed, idleFrom: server_vad's idle_timeout_ms clock runs from idleFrom (timeline sample:
	// the end of the last response's audio) while armed; speech disarms it.
	idleArmed bool
	idleFrom  int64
	limit     eventLimiter // client events over the connection's rate are refused (ratelimit.go)
	bytes     byteLimiter  // and events over their principal's byte budget (ratelimit.go)
}

// dropSpeculation cancels the turn's speculation, if any.
func (in *inputSide) dropSpeculation() {
	in.spec.drop()
	in.spec = nil
}

// takeSpeculation hands the turn's speculation to whoever ends the turn.
func (in *inputSide) takeSpeculation() *speculation {
	s := in.spec
	in.spec = nil
	return s
}

// takeSpeechItem returns the id speech_started named (or a fresh one) and forgets it.
func (in *inputSide) takeSpeechItem() string {
	id := in.speechItem
	in.speechItem = ""
	if id == "" {
		id = wire.NewID("item_")
	}
	return id
}

// resetTurn forgets a turn in progress (manual commit, clear).
func (in *inputSide) resetTurn() {
	if in.detector != nil {
		in.detector.Reset()
	}
	in.partials.reset()
	in.dropSpeculation()
}

// takeFloor starts the turn the user took at timeline sample at (prefix padding included): its
// item is named, the partials and any speculation start afresh, idle_timeout_ms's clock stops.
// It returns the event that announces the turn.
func (in *inputSide) takeFloor(at int64) wire.InputAudioBufferSpeechStarted {
	in.speechItem = wire.NewID("item_")
	in.input.speechStart = at
	in.idleArmed = false
	in.partials.reset()
	in.dropSpeculation()
	return wire.InputAudioBufferSpeechStarted{AudioStartMs: sampleMs(at), ItemID: in.speechItem}
}

// yielded is a turn the user yielded, handed over by the input side: the event that announces
// it, its item and audio (raw and 16 kHz), its speculation (nil: none), and the silence waited
// out before it was decided (waited false: the detector did not say).
type yielded struct {
	stopped wire.InputAudioBufferSpeechStopped
	item    string
	raw     []byte
	pcm     []float32
	start   int64 // the timeline sample of pcm[0]
	spec    *speculation
	wait    time.Duration
	waited  bool
}

// yieldFloor ends the turn held at timeline sample at (speechEnd: where its last speech ended, 0
// when not said) and hands it over: its audio leaves the buffer.
func (in *inputSide) yieldFloor(at, speechEnd int64) yielded {
	end := min(at, in.input.timeline)
	y := yielded{stopped: wire.InputAudioBufferSpeechStopped{AudioEndMs: sampleMs(end), ItemID: in.speechItem}}
	if speechEnd > 0 {
		// The audio after the last speech that had to arrive before the turn was decided.
		y.wait, y.waited = time.Duration(in.input.timeline-speechEnd)*time.Second/hearRate, true
	}
	y.start = max(in.input.speechStart, in.input.start)
	y.raw, y.pcm = in.input.takeSpan(in.input.speechStart, end)
	y.item = in.takeSpeechItem()
	y.spec = in.takeSpeculation()
	return y
}

// heard is what one step of input audio caused, as the input side decides it without sending
// anything: the conversation acts on it (conversation.heard).
type heard struct {
	speech int          // samples the squelch passed: billed as heard (all without a squelch)
	turns  []turn.Event // the turn detector's events, positions on the session's timeline
	// detectErr: the turn detector failed (reported to the client; the audio is still heard).
	detectErr error
	// squelchErr: the squelch failed (logged; all the audio is billed as heard).
	squelchErr error
}

// hear runs one step of audio, already buffered at 16 kHz (pcm ends the timeline), through the
// input side's models: the turn detector hears it before anything else, then the squelch says
// what of it is speech.
func (in *inputSide) hear(pcm []float32) heard {
	h := heard{speech: len(pcm)}
	if in.detector != nil {
		evs, err := in.detector.Feed(pcm, in.input.timeline-int64(len(pcm))-in.detectBase)
		if err != nil {
			h.detectErr = fmt.Errorf("turn detection: %w", err)
		}
		h.turns = in.onTimeline(evs)
	}
	if in.squelch != nil {
		if passed, err := in.squelch.Push(pcm); err != nil {
			h.squelchErr = err
		} else {
			h.speech = len(passed)
		}
	}
	return h
}

// onTimeline places the detector's events, whose positions count from detectBase, on the
// session's timeline (never before its start).
func (in *inputSide) onTimeline(evs []turn.Event) []turn.Event {
	at := func(pos int64) int64 { return max(in.detectBase+pos, 0) }
	for i, ev := range evs {
		switch e := ev.(type) {
		case turn.SpeechStarted:
			e.Start = at(e.Start)
			evs[i] = e
		case turn.SpeechStopped:
			e.End = at(e.End)
			if e.SpeechEnd > 0 { // 0: the detector does not say
				e.SpeechEnd = at(e.SpeechEnd)
			}
			evs[i] = e
		case turn.EndLikely:
			e.At = at(e.At)
			evs[i] = e
		case turn.EndUnlikely:
			e.At = at(e.At)
			evs[i] = e
		case turn.Paused:
			e.At = at(e.At)
			evs[i] = e
		case turn.Onset:
			e.At = at(e.At)
			evs[i] = e
		case turn.OnsetLost:
			e.At = at(e.At)
			evs[i] = e
		}
	}
	return evs
}

// inputBuffer is the user audio not yet committed, in the session's input format (raw) and at
// 16 kHz (pcm). Owned by the input goroutine.
type inputBuffer struct {
	format    wire.AudioFormat
	rate      int
	resampler *audio.Resampler
	raw       []byte
	pcm       []float32
	decoded   []float32 // append's samples at the format's rate, reused
	start     int64     // timeline sample of pcm[0]
	timeline  int64     // 16 kHz samples heard in this session (audio_start_ms / audio_end_ms clock)
	// speechStart is the timeline sample speech_started named (prefix padding included).
	speechStart int64
	// refusedFull: track audio past maxInputAudio was refused once (input_audio_buffer_full);
	// track audio is dropped without another refusal until a commit or clear makes room.
	refusedFull bool
	// track: input audio arrives from a track (Media.TrackInput) as 16 kHz samples, not as bytes
	// in the input format: it joins the buffer after the decode step (appendSamples) and the
	// buffer is measured by pcm. raw is then the samples rendered in the input format (render:
	// 16 kHz to the format's rate, as they come), only for the copy a committed turn's item keeps
	// for retrieve: nothing the pipeline hears passes through it.
	track    bool
	render   *audio.Resampler
	renderTo int // the rate render resamples to
}

func (b *inputBuffer) setFormat(f wire.AudioFormat) error {
	if b.resampler != nil && b.format == f {
		return nil
	}
	r, err := audio.NewResampler(f.SampleRate(), hearRate)
	if err != nil {
		return fmt.Errorf("input resampler: %w", err)
	}
	b.format, b.rate, b.resampler = f, f.SampleRate(), r
	return nil
}

// decodeInput turns one append's bytes into samples at the format's rate.
func decodeInput(f wire.AudioFormat, data []byte) ([]float32, error) {
	return codecOf(f).Decode(data)
}

// append adds one append's audio and returns it at 16 kHz: the new tail of b.pcm (its capacity
// capped there), which the resampler wrote in place; the samples at the format's rate pass
// through one reused buffer (decoded).
func (b *inputBuffer) append(data []byte) ([]float32, error) {
	decoded, err := codecOf(b.format).AppendDecode(b.decoded[:0], data)
	if err != nil {
		return nil, err
	}
	b.decoded = decoded
	if cap(b.decoded) > maxKeptDecoded {
		b.decoded = nil // one long append's buffer is not kept for the 20 ms ones
	}
	b.raw = grown(b.raw, len(data), (maxInputAudio+hearStep)*b.rate/1000*b.format.BytesPerSample())
	b.raw = append(b.raw, data...)
	if len(b.pcm) == 0 {
		b.start = b.timeline
	}
	n := len(b.pcm)
	b.pcm = b.resampler.ProcessTo(grown(b.pcm, len(decoded)*hearRate/b.rate+resampleSlack, (maxInputAudio+hearStep)*hearRate/1000), decoded)
	pcm := b.pcm[n:len(b.pcm):len(b.pcm)]
	b.timeline += int64(len(pcm))
	return pcm, nil
}

const (
	// maxKeptDecoded: the decode buffer kept between appends, in samples (100 ms at 48 kHz).
	maxKeptDecoded = 4800
	// resampleSlack: the resampler may emit a few samples more than a chunk's exact share.
	resampleSlack = 8
)

// grown returns s with room for n more elements. Where it lacks it, s is grown to twice its
// capacity (append grows a large slice by a quarter), so a buffer that grows 20 ms at a time is
// copied about once per sample instead of about four times; but not past most, the most the
// buffer holds (maxInputAudio and one more step), while that is room enough.
func grown[T any](s []T, n, most int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	c := max(len(s)+n, 2*cap(s))
	if len(s)+n <= most {
		c = min(c, most)
	}
	out := make([]T, len(s), c)
	copy(out, s)
	return out
}

// appendSamples adds track audio, already at 16 kHz: the recogniser hears the track's own
// samples, never the session's wire encoding of them.
func (b *inputBuffer) appendSamples(pcm []float32) {
	if len(b.pcm) == 0 {
		b.start = b.timeline
	}
	b.pcm = append(b.pcm, pcm...)
	b.timeline += int64(len(pcm))
	if r := b.renderer(); r != nil {
		b.raw = append(b.raw, codecOf(b.format).Encode(audio.Float32ToInt16(r.Process(pcm)))...)
	}
}

// renderer is the streaming resampler that renders track audio at the input format's rate (nil
// if it cannot be made: the turn then keeps no audio for retrieve).
func (b *inputBuffer) renderer() *audio.Resampler {
	if b.render == nil || b.renderTo != b.rate {
		r, err := audio.NewResampler(hearRate, b.rate)
		if err != nil {
			return nil
		}
		b.render, b.renderTo = r, b.rate
	}
	return b.render
}

// bufferedMs is how much audio is waiting, by the client's own bytes (by the samples, for track
// audio).
func (b *inputBuffer) bufferedMs() float64 {
	if b.track {
		return samplesMs(len(b.pcm))
	}
	return b.format.Millis(len(b.raw))
}

// fits says whether n more bytes of the input format keep the buffer within maxInputAudio.
func (b *inputBuffer) fits(n int) bool { return b.format.Millis(len(b.raw)+n) <= maxInputAudio }

// fitsSamples says whether n more 16 kHz samples of track audio keep the buffer within
// maxInputAudio.
func (b *inputBuffer) fitsSamples(n int) bool { return samplesMs(len(b.pcm)+n) <= maxInputAudio }

// samplesMs is n 16 kHz samples in milliseconds.
func samplesMs(n int) float64 { return float64(n) * 1000 / hearRate }

// stepBytes is hearStep of the input format, in bytes (whole samples).
func (b *inputBuffer) stepBytes() int { return b.rate * hearStep / 1000 * b.format.BytesPerSample() }

// takeAll empties the buffer and returns its audio (raw and 16 kHz).
func (b *inputBuffer) takeAll() ([]byte, []float32) {
	raw, pcm := b.raw, b.pcm
	b.raw, b.pcm = nil, nil
	b.start = b.timeline
	b.refusedFull = false
	if b.track && b.render != nil {
		// The whole turn: what the renderer holds back for its next input ends it.
		raw = append(raw, codecOf(b.format).Encode(audio.Float32ToInt16(b.render.Flush()))...)
	}
	return raw, pcm
}

// takeSpan returns the audio between timeline samples from and to and keeps what follows to.
func (b *inputBuffer) takeSpan(from, to int64) ([]byte, []float32) {
	return b.cut(from, to)
}

// cut drops the audio before to, returning that between from and to.
func (b *inputBuffer) cut(from, to int64) ([]byte, []float32) {
	n := int64(len(b.pcm))
	lo := min(max(from-b.start, 0), n)
	hi := min(max(to-b.start, lo), n)
	if n == 0 {
		return nil, nil
	}
	bps := int64(b.format.BytesPerSample())
	rawAt := func(i int64) int64 { return min(i*int64(len(b.raw))/n/bps*bps, int64(len(b.raw))) }
	raw := append([]byte(nil), b.raw[rawAt(lo):rawAt(hi)]...)
	pcm := append([]float32(nil), b.pcm[lo:hi]...)
	b.raw = append([]byte(nil), b.raw[rawAt(hi):]...)
	b.pcm = append([]float32(nil), b.pcm[hi:]...)
	b.start += hi
	b.refusedFull = false
	return raw, pcm
}

// keepBetweenTurns is the audio kept while turn detection says nobody is speaking: more than any
// speech_started reaches back (prefix padding plus the detector's own lag), far less than a session.
const keepBetweenTurns = 5 * hearRate

// trimQuiet drops audio older than keepBetweenTurns. It runs only between turns under a detector,
// whose commits never reach back further, so the buffer no longer grows with the silence a live
// microphone sends (600 s of it was ~67 MB). It trims once twice the keep has built up, so the
// copy it makes costs a few bytes per sample heard.
func (b *inputBuffer) trimQuiet() {
	if int64(len(b.pcm)) <= 2*keepBetweenTurns {
		return
	}
	b.cut(b.start, b.timeline-keepBetweenTurns)
}

// clear drops the buffer.
func (b *inputBuffer) clear() {
	b.raw, b.pcm = nil, nil
	b.start = b.timeline
	b.refusedFull = false
	if b.render != nil {
		b.render.Reset()
	}
}

// sampleMs converts a timeline sample to milliseconds, for the wire (audio_start_ms, audio_end_ms).
func sampleMs(s int64) int64 { return s * 1000 / hearRate }
