package session

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/wire"
)

// partials keeps the latest partial transcript of the turn in progress for semantic_vad and the
// streamed transcript deltas: the input goroutine starts a decode of the open turn's audio on a
// worker each time half a second more has arrived; Partial returns whatever text is in hand, at
// once. On a SharedEars a new decode is asked for even while the last waits: the decoder keeps
// only the newest partial of a conversation queued (the older one's worker returns at once), so
// a partial is never stale by the time it runs. On a plain Ears one decode runs at a time.
type partials struct {
	text    atomic.Pointer[partialText]
	busy    atomic.Int32 // decode workers running
	gen     atomic.Int64 // bumped by reset: a decode started before it is dropped
	decoded int          // samples of the turn the last decode started with (input goroutine)
	// paused: the speaker paused (turn.Paused) and no decode has started since: the next
	// maybeDecode decodes whatever audio came since the last, not waiting for the cadence
	// (input goroutine).
	paused bool

	mu sync.Mutex // the workers' results, applied in the order they were asked for
	// applied is the sequence number of the newest decode whose result was used.
	applied, asked int64
	// streamed is the transcript already sent as input_audio_transcription.delta for streamedGen's
	// turn.
	streamed    string
	streamedGen int64
	// mel is the open turn's log-mel when Ears take features (shared by the decode workers under
	// its own lock).
	mel partialMel
}

// partialMel keeps the open turn's log-mel (audio.MelStream) between its partial decodes: a turn's
// audio only grows until the turn ends, so each decode computes only the frames new since the
// last, bit for bit what LogMel of the whole window gives (audio's TestMelStreamEqualsLogMel).
// Several workers may decode partials of one conversation at once (a SharedEars keeps the newest
// queued): each computes under mu into a buffer of its own, which it keeps until its decode
// returns.
type partialMel struct {
	mu     sync.Mutex
	stream *audio.MelStream
	gen    int64 // the turn (partials.gen) stream holds
	start  int64 // the timeline sample of the stream's first sample
	bufs   sync.Pool
}

// transcribe decodes pcm, the turn gen's audio so far (its last window when slid): through the
// turn's MelStream when ears take features and the turn still fits one window, else as a whole
// window (a turn past 30 s slides its window, which a MelStream cannot follow).
func (m *partialMel) transcribe(ctx context.Context, ears Ears, h Hearing, gen, start int64, pcm []float32, slid bool) (string, error) {
	me, ok := ears.(MelEars)
	if !ok || slid || len(pcm) > audio.WhisperSamples {
		return hearWith(ctx, ears, h, pcm)
	}
	m.mu.Lock()
	if m.stream == nil {
		m.stream = audio.NewMelStream(me.NumMels())
	}
	if m.gen != gen || m.start != start || m.stream.Len() > len(pcm) {
		m.stream.Reset() // a new turn (or an older snapshot than the last) restarts the stream
		m.gen, m.start = gen, start
	}
	buf := m.features(pcm)
	m.mu.Unlock()
	return m.decode(ctx, me, h, buf)
}

// final decodes a committed turn's audio pcm (timeline samples from start on) through the
// stream its partials built, when that stream holds the same turn from the same sample and no
// more than pcm: the final then computes only the frames the partials had not, and its features
// are the same bit for bit as a whole decode's (audio.MelStream). ok is false when the stream
// cannot serve (no features, another turn, another start, a stream past pcm, a window past
// 30 s): the caller decodes the whole window.
func (m *partialMel) final(ctx context.Context, ears Ears, h Hearing, gen, start int64, pcm []float32) (text string, ok bool, err error) {
	me, isMel := ears.(MelEars)
	if !isMel || len(pcm) > audio.WhisperSamples {
		return "", false, nil
	}
	m.mu.Lock()
	if m.stream == nil || m.gen != gen || m.start != start || m.stream.Len() > len(pcm) {
		m.mu.Unlock()
		return "", false, nil
	}
	buf := m.features(pcm)
	m.mu.Unlock()
	text, err = m.decode(ctx, me, h, buf)
	return text, true, err
}

// features appends the audio of pcm past what the stream holds and computes the features into a
// pooled buffer. m.mu is held.
func (m *partialMel) features(pcm []float32) *[]float32 {
	buf, _ := m.bufs.Get().(*[]float32)
	if buf == nil {
		buf = new([]float32)
	}
	m.stream.Append(pcm[m.stream.Len():])
	*buf = m.stream.Compute(*buf)
	return buf
}

// decode hears the features in buf and returns buf to the pool.
func (m *partialMel) decode(ctx context.Context, me MelEars, h Hearing, buf *[]float32) (string, error) {
	text, err := me.TranscribeMel(ctx, *buf, h)
	if ctx.Err() == nil { // cancelled, the decoder may still be reading buf: leave it to the GC
		m.bufs.Put(buf)
	}
	return text, err
}

// decodeOn is what a partial decode needs of its conversation: its context, ears and workers
// (run waits for them), its id (whose the decode is) and its outbox (the transcript deltas).
type decodeOn struct {
	ctx    context.Context
	ears   Ears
	work   *sync.WaitGroup
	convID string
	// language is the session's transcription language (Hearing.Language).
	language string
	send     func(wire.ServerEvent)
	// logprobs: the session's include[] asks for logprobs, so streamed partials are decoded through
	// LogprobEars (the whole window, not the turn's MelStream) and each delta carries its tokens'.
	logprobs bool
}

// partialText is a partial transcript and the timeline sample its audio ran to (the turn's
// audio when its decode started): a partial that ends before the speech did has not heard the
// last words (lastWords).
type partialText struct {
	text string
	end  int64
}

// partialCadence is the new audio (16 kHz samples) that starts another partial decode.
const partialCadence = hearRate / 2

// Partial returns the latest partial transcript ("" when none yet).
func (p *partials) Partial() string {
	text, _ := p.inHand()
	return text
}

// inHand returns the latest partial transcript and the timeline sample its audio ran to (0, ""
// when none yet).
func (p *partials) inHand() (string, int64) {
	if t := p.text.Load(); t != nil {
		return t.text, t.end
	}
	return "", 0
}

func (p *partials) reset() {
	p.gen.Add(1)
	p.text.Store(nil)
	p.decoded, p.paused = 0, false
}

// maybeDecode starts a partial decode of the open turn (pcm, from timeline sample start on) when partialCadence more audio has come
// since the last one started, or, after a pause (paused), when any has: the partial in hand at
// the pause then holds the turn's last words, for semantic_vad's judgement and a speculation on
// them, rather than what was said up to half a second earlier. With stream (the session transcribes its
// input) the words it adds to what was already sent go out as
// conversation.item.input_audio_transcription.delta for item, while the user still speaks; a
// partial that revises earlier words sends nothing (a delta cannot take words back): the
// transcription's completed event carries the final text.
func (p *partials) maybeDecode(c decodeOn, pcm []float32, start int64, item string, stream bool) {
	need := partialCadence
	if p.paused {
		need = 1
	}
	if c.ears == nil || len(pcm)-p.decoded < need {
		return
	}
	// Two on a shared decoder: one decoding and the newest waiting (a third replaces it).
	limit := int32(1)
	if _, shared := c.ears.(SharedEars); shared {
		limit = 3
	}
	if p.busy.Add(1) > limit {
		p.busy.Add(-1)
		return
	}
	p.decoded, p.paused = len(pcm), false
	end := start + int64(len(pcm))
	snapshot := append([]float32(nil), pcm[max(0, len(pcm)-audio.WhisperSamples):]...)
	slid := len(pcm) > audio.WhisperSamples
	if slid {
		start += int64(len(pcm) - audio.WhisperSamples)
	}
	gen := p.gen.Load()
	p.mu.Lock()
	p.asked++
	seq := p.asked
	p.mu.Unlock()
	c.work.Go(func() {
		defer p.busy.Add(-1)
		h := Hearing{Conversation: c.convID, Partial: true, Language: c.language}
		var text string
		var lps []wire.Logprob
		var err error
		if lpEars, ok := c.ears.(LogprobEars); ok && c.logprobs && stream {
			text, lps, err = lpEars.TranscribeLogprobs(c.ctx, snapshot, h)
		} else {
			text, err = p.mel.transcribe(c.ctx, c.ears, h, gen, start, snapshot, slid)
		}
		if err != nil || p.gen.Load() != gen {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if seq < p.applied {
			return // a newer partial is already in hand
		}
		p.applied = seq
		p.text.Store(&partialText{text: text, end: end})
		if p.streamedGen != gen {
			p.streamed, p.streamedGen = "", gen // a new turn
		}
		if stream && len(text) > len(p.streamed) && strings.HasPrefix(text, p.streamed) {
			c.send(wire.InputAudioTranscriptionDelta{ItemID: item, Delta: text[len(p.streamed):], Logprobs: tokensFrom(lps, text, len(p.streamed), c.logprobs)})
			p.streamed = text
		}
	})
}
