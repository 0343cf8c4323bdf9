package session

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/voiced/voiced/wire"
)

// Interruptions that are meant (issue 22), under a session's voiced.interruption: speech that
// starts while a reply runs pauses the reply (its writer sends nothing more; playback position
// kept) and is judged before the client hears of it. It interrupts once it has lasted
// min_duration_ms and, with min_words, once its partial transcript holds that many words that
// are not a backchannel alone ("mm-hm", "yeah", "right", …); then speech_started goes out (its
// audio_start_ms where the speech began) and the reply is cancelled and truncated as before. If
// the speech ends first, it was none: the turn is dropped without an event (no speech_started, no
// item) and the reply resumes where it paused. A client therefore never sees a speech_started it
// must take back: OpenAI's clients cut their playback on it (openai-agents-js truncates at once,
// realtime-api-beta cancels), so it is sent only for a real interruption.

// pending is speech heard during a reply and not yet judged (input goroutine).
type pending struct {
	started wire.InputAudioBufferSpeechStarted // withheld until judged an interruption
	onset   int64                              // timeline sample where the speech itself began
}

// pauseGate holds the replies' writers while speech is judged: wait returns at once while open.
// Any goroutine.
type pauseGate struct {
	mu     sync.Mutex
	closed chan struct{} // nil: open; else closed when opened again
	// brief, when set, opens a hold taken by holdBriefly once it expires; any other hold or
	// release stops it.
	brief *time.Timer
}

// hold pauses the replies before their next audio.
func (g *pauseGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopBrief()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// holdBriefly pauses the replies for at most d unless hold or release comes first; at expiry
// the gate opens and then() runs (under the gate's lock, so a hold that follows it comes after).
// A brief hold already taken starts its d again; a hold (not brief) is left as it is.
func (g *pauseGate) holdBriefly(d time.Duration, then func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil && g.brief == nil {
		return
	}
	g.stopBrief()
	ch := g.closed
	if ch == nil {
		ch = make(chan struct{})
		g.closed = ch
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.brief != t || g.closed != ch {
			return
		}
		g.brief = nil
		close(ch)
		g.closed = nil
		then()
	})
	g.brief = t
}

func (g *pauseGate) stopBrief() {
	if g.brief != nil {
		g.brief.Stop()
		g.brief = nil
	}
}

// release resumes them.
func (g *pauseGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopBrief()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// held says whether the gate holds the replies.
func (g *pauseGate) held() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed != nil
}

// wait returns once the gate is open, or ctx's error.
func (g *pauseGate) wait(ctx context.Context) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// onsetPauseMax bounds a pause on an onset (onsetHeard) that neither becomes a turn nor is
// settled by more audio (the client stopped sending in the middle of it): the reply plays on
// after it (wall clock, from the last onset).
const onsetPauseMax = 1 * time.Second

// onsetGrace is the audio a pause on an onset outlives the run that broke: speech whose first
// run breaks before the detector's minimum speech (the "s" of "stop", then the "t"'s closure)
// starts again within it. Measured on the stop corpus (tests/rooms_corpus_test.go): gaps up to
// 320 ms between the broken run and the next.
const onsetGrace = 400 * hearRate / 1000

// onsetHeard: the detector scored a window as speech during a reply that the session judges
// (voiced.interruption): the reply pauses at once, before the run has lasted the detector's
// minimum speech (turn.DefaultMinSpeech, 160 ms), so output stops as soon as speech is heard;
// holdSpeech keeps it paused if the run becomes a turn; a run that breaks first resumes it
// onsetGrace later unless speech starts again (onsetSettle). On WebSocket a spike costs nothing
// audible (the client holds what it was sent); on a WebRTC track it is a gap of the spike and
// the grace, ~0.5 s.
func (c *conversation) onsetHeard() {
	td := c.in.sess.TurnDetection
	if c.in.sess.Interruption == nil || !td.InterruptResponse || c.in.pending != nil || (!c.in.onset && !c.speaking()) {
		return
	}
	c.in.onset, c.in.onsetLost = true, -1
	c.pause.holdBriefly(onsetPauseMax, c.resumePlayer)
	c.pausePlayer()
}

// onsetLost: the run onsetHeard paused for broke at timeline sample at before it was a turn.
func (c *conversation) onsetLost(at int64) {
	if c.in.onset {
		c.in.onsetLost = at
	}
}

// onsetSettle resumes the reply paused on an onset once onsetGrace of audio has passed since
// its run broke with no new one.
func (c *conversation) onsetSettle() {
	if !c.in.onset || c.in.onsetLost < 0 || c.in.input.timeline-c.in.onsetLost < onsetGrace {
		return
	}
	c.endOnset()
}

// endOnset forgets a pause on an onset and, unless speech is held, resumes the reply.
func (c *conversation) endOnset() {
	if !c.in.onset {
		return
	}
	c.in.onset = false
	if c.in.pending == nil {
		c.pause.release()
		c.resumePlayer()
	}
}

// holdSpeech takes speech that started at timeline sample at (prefix padding included) into
// judgement when the session asks for it and a reply is running: the turn is opened, its
// speech_started withheld, the replies paused. False: speech_started goes out as before.
func (c *conversation) holdSpeech(at int64) bool {
	td := c.in.sess.TurnDetection
	if c.in.sess.Interruption == nil || !td.InterruptResponse || !c.speaking() {
		return false
	}
	ev := c.in.takeFloor(at)
	onset := min(at+int64(td.PrefixPaddingMs)*hearRate/1000, c.in.input.timeline)
	c.in.pending = &pending{started: ev, onset: onset}
	c.pause.hold()
	c.pausePlayer()
	return true
}

// judgeSpeech decides on the speech held, after each step of audio: an interruption once it
// qualifies (or once no reply is left to protect).
func (c *conversation) judgeSpeech() {
	p := c.in.pending
	if p == nil {
		return
	}
	if !c.speaking() || c.interrupts(c.in.input.timeline-p.onset, c.in.partials.Partial()) {
		c.interruptNow()
	}
}

// speaking: a reply is being written, or its audio is still queued on the transport's player
// (a reply whose writer is done plays its last ≤ 2 s from the WebRTC track's queue).
func (c *conversation) speaking() bool {
	if c.replies.answeringLive() {
		return true
	}
	pl := c.media.Player
	return pl != nil && !c.hist.playedAll(pl.Played())
}

// interrupts says whether speech that has lasted n samples, its partial transcript text,
// interrupts the reply.
func (c *conversation) interrupts(n int64, text string) bool {
	rule := c.in.sess.Interruption
	if n < int64(rule.MinDurationMs)*hearRate/1000 {
		return false
	}
	if rule.MinWords == 0 {
		return true
	}
	words := wordsOf(text)
	return len(words) >= rule.MinWords && !backchannel(words, c.language())
}

// interruptNow: the speech held is an interruption: speech_started goes out and the reply is
// cut as it was before judgement existed.
func (c *conversation) interruptNow() {
	p := c.in.pending
	c.in.pending = nil
	c.send(p.started)
	c.turns.answerSince.Store(0)
	c.cancelReply("", errTurnDetected)
	c.clearPlayback(false)
	c.room.dropFar()
	c.pause.release() // the cancelled writer returns
	c.resumePlayer()  // its queue was cleared: nothing of the reply plays on
}

// speechEnded judges the speech held when it ends at timeline sample at: an interruption by its
// last partial, else none: the turn is dropped without a word to the client and the reply
// resumes. True when the turn is dropped.
func (c *conversation) speechEnded(at, speechEnd int64) bool {
	p := c.in.pending
	if p == nil {
		return false
	}
	end := at
	if speechEnd > 0 {
		end = speechEnd
	}
	if c.interrupts(end-p.onset, c.lastWords(end-p.onset, end)) {
		c.interruptNow()
		return false
	}
	c.in.pending = nil
	y := c.in.yieldFloor(at, speechEnd)
	y.spec.drop()
	c.in.partials.reset()
	c.log.Debug("speech during a reply was no interruption: the reply resumes", "ms", sampleMs(end-p.onset), "partial", c.in.partials.Partial())
	c.pause.release()
	c.resumePlayer()
	return true
}

// lastWordsWait bounds the decode of the last words (lastWords): the reply stays paused while
// it runs; past it the partial in hand judges.
const lastWordsWait = time.Second

// lastWords is the transcript that judges speech held for n samples when it ended at timeline
// sample end: the partial in hand, unless it was decoded from audio that stopped before the
// speech did and the verdict hangs on words (min_words, the duration passed, the partial alone
// not enough). Then the held speech itself (its last 30 s) is decoded now as a final (ahead of
// the partials in a shared decoder's queue), bounded by lastWordsWait: a partial half a second
// behind ("stop" of "stop, wait") or still queued behind other conversations' finals would
// otherwise judge words it never heard. On an error or past the wait, the partial judges.
func (c *conversation) lastWords(n, end int64) string {
	text, heardTo := c.in.partials.inHand()
	rule := c.in.sess.Interruption
	if rule.MinWords == 0 || n < int64(rule.MinDurationMs)*hearRate/1000 || heardTo >= end || c.engines.Ears == nil {
		return text
	}
	if words := wordsOf(text); len(words) >= rule.MinWords && !backchannel(words, c.language()) {
		return text // it interrupts already: more words cannot take that back
	}
	in := &c.in.input
	from := max(in.speechStart, in.start, end-earsWindow)
	if end <= from || end-in.start > int64(len(in.pcm)) {
		return text
	}
	ctx, cancel := context.WithTimeout(c.ctx, lastWordsWait)
	defer cancel()
	asked := time.Now()
	// A copy: a decoder given up on may still read it while the buffer is trimmed.
	held := append([]float32(nil), in.pcm[from-in.start:end-in.start]...)
	heard, err := hearWith(ctx, c.engines.Ears, Hearing{Conversation: c.convID, Language: c.lang.partial()}, held)
	if err != nil {
		c.log.Debug("the last words of speech during a reply were not heard in time: its partial judges", "err", err, "partial", text)
		return text
	}
	c.log.Debug("speech during a reply judged by its last words", "partial", text, "heard", heard, "ms", time.Since(asked).Milliseconds())
	return heard
}

// dropPending forgets speech held when the turn is ended another way (a manual commit, a
// clear, a new configuration): the reply resumes.
func (c *conversation) dropPending() {
	c.endOnset()
	if c.in.pending != nil {
		c.in.pending = nil
		c.pause.release()
		c.resumePlayer()
	}
}

// language is the session's transcription language ("" when not said).
func (c *conversation) language() string {
	if t := c.in.sess.Transcription; t != nil {
		return t.Language
	}
	return ""
}

// wordsOf splits a transcript into lower-case words, punctuation dropped ("Mm-hmm." → mm hmm).
func wordsOf(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// backchannels are the words that, alone or repeated, say "go on" rather than take the floor,
// per served language (ISO-639-1, Whisper's codes). A session with no transcription language
// uses them all.
var backchannels = map[string][]string{
	"en": {"mm", "mmm", "hm", "hmm", "mhm", "uh", "huh", "um", "ah", "oh", "yeah", "yes", "yep", "yup", "ya",
		"ok", "okay", "right", "sure", "alright", "aha", "i", "see", "got", "it", "cool", "nice", "wow", "true", "exactly", "uhhuh"},
	"es": {"sí", "si", "ajá", "aja", "vale", "claro", "ya", "mhm", "eh", "bueno", "exacto"},
	"fr": {"oui", "ouais", "d'accord", "accord", "ok", "mhm", "hum", "ah", "bon", "voilà", "exactement"},
	"de": {"ja", "jaja", "genau", "okay", "ok", "mhm", "hm", "aha", "stimmt", "klar", "richtig"},
	"it": {"sì", "si", "certo", "ok", "okay", "mhm", "ah", "già", "esatto", "va", "bene"},
	"pt": {"sim", "é", "ok", "tá", "ta", "certo", "claro", "mhm", "aham", "uhum", "exato"},
}

var allBackchannels = func() map[string]bool {
	all := map[string]bool{}
	for _, ws := range backchannels {
		for _, w := range ws {
			all[w] = true
		}
	}
	return all
}()

var backchannelSets = func() map[string]map[string]bool {
	sets := map[string]map[string]bool{}
	for lang, ws := range backchannels {
		sets[lang] = map[string]bool{}
		for _, w := range ws {
			sets[lang][w] = true
		}
	}
	return sets
}()

// backchannel says whether words are a backchannel alone in language lang.
func backchannel(words []string, lang string) bool {
	set, ok := backchannelSets[strings.ToLower(lang)]
	if !ok {
		set = allBackchannels
	}
	for _, w := range words {
		if !set[w] {
			return false
		}
	}
	return len(words) > 0
}
