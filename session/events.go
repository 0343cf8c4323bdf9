package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/turn"
	"github.com/voiced/voiced/wire"
)

// handle answers one client event, on the input goroutine.
func (c *conversation) handle(ev wire.ClientEvent) {
	id := ev.ClientEventID()
	if c.refusedInTranscription(ev) { // transcription.go
		return
	}
	switch e := ev.(type) {
	case *wire.SessionUpdate:
		c.sessionUpdate(e)
	case *wire.InputAudioBufferAppend:
		c.appendAudio(e)
	case *wire.InputVideoBufferAppend:
		c.appendFrame(e) // video.go
	case *wire.InputAudioBufferCommit:
		if ms := c.in.input.bufferedMs(); ms < minCommitMs {
			c.send(wire.ErrCommitEmpty(ms, id))
			return
		}
		raw, pcm := c.in.input.takeAll()
		c.dropPending()
		c.in.resetTurn()
		c.commit(c.in.takeSpeechItem(), raw, pcm, noSpan)
	case *wire.InputAudioBufferClear:
		c.in.input.clear()
		c.dropPending()
		c.in.resetTurn()
		c.in.speechItem = ""
		c.send(wire.InputAudioBufferCleared{})
	case *wire.ConversationItemCreate:
		c.createItem(e)
	case *wire.ConversationItemDelete:
		if !c.hist.delete(e.ItemID) {
			c.send(wire.ErrDeleteUnknownItem(e.ItemID, id))
			return
		}
		c.send(wire.ConversationItemDeleted{ItemID: e.ItemID})
	case *wire.ConversationItemRetrieve:
		it, ok := c.hist.retrieved(e.ItemID)
		if !ok {
			c.send(wire.ErrRetrieveUnknownItem(e.ItemID, id))
			return
		}
		c.outbox.sendWritten(wire.ConversationItemRetrieved{Item: it})
	case *wire.ConversationItemTruncate:
		if err := c.hist.truncate(e); err != nil {
			c.send(err)
			return
		}
		c.room.dropFar() // the client stopped playing there
		c.send(wire.ConversationItemTruncated{ItemID: e.ItemID, ContentIndex: e.ContentIndex, AudioEndMs: e.AudioEndMs})
	case *wire.ResponseCreate:
		if e.Response.Tools.Set() {
			if err := c.mcp.checkMCPTools(e.Response.Tools.Value, "response.tools", id, true); err != nil {
				c.send(err)
				return
			}
		}
		if err := c.startReply(e.Response, id); err != nil {
			c.send(err)
		}
	case *wire.ResponseCancel:
		if !c.cancelReply(e.ResponseID, errClientCancelled) {
			c.send(wire.ErrCancelNotActive(id))
		}
	case *wire.OutputAudioBufferClear:
		// With a Player the unplayed audio is cut here; over a WebSocket the client holds it and
		// there is no buffer here to clear.
		c.clearPlayback(true)
		c.room.dropFar()
	default:
		c.send(wire.ErrInvalidEvent(id, fmt.Sprintf("The event type '%s' is not supported.", ev.EventType())))
	}
}

func (c *conversation) sessionUpdate(u *wire.SessionUpdate) {
	d, err := u.Redecide(c.in.dialect, !c.in.sessionSeen)
	if err != nil {
		c.sendError(err)
		return
	}
	if v := u.Session.Voice; v.Set() && v.Value != c.in.sess.Voice && c.turns.assistantAudio.Load() {
		param := "session.voice"
		if c.in.dialect == wire.GA {
			param = "session.audio.output.voice"
		}
		c.sendError(wire.ErrInvalidValue(param, u.ClientEventID(), "Cannot update a conversation's voice if assistant audio is present."))
		return
	}
	next := c.in.sess
	if err := c.applyUpdate(&next, u); err != nil { // transcription.go: a type may change on the first
		c.sendError(err)
		return
	}
	if u.Session.Tools.Present {
		if err := c.mcp.checkMCPTools(next.Tools, "session.tools", u.ClientEventID(), false); err != nil {
			c.sendError(err)
			return
		}
	}
	if len(u.Session.Ignored) > 0 {
		c.log.Warn("session.update fields accepted but not applied", "fields", u.Session.Ignored)
	}
	c.in.sessionSeen = true
	if d != c.in.dialect {
		c.in.dialect = d
		c.outbox.enc.SetDialect(d)
	}
	prev := c.in.sess
	c.in.sess = next
	if prev.TurnDetection != next.TurnDetection || prev.InputFormat != next.InputFormat {
		if err := c.configure(); err != nil {
			c.in.sess = prev
			c.configure()
			c.sendError(wire.ErrServer("the session's audio settings could not be applied: "+err.Error(), u.ClientEventID()))
			return
		}
	}
	if err := c.configureRoom(); err != nil {
		c.in.sess = prev
		c.configureRoom()
		c.sendError(wire.ErrServer("the session's audio settings could not be applied: "+err.Error(), u.ClientEventID()))
		return
	}
	c.lang.set(c.in.sess)
	c.send(wire.SessionUpdated{Session: c.in.sess})
	c.syncMCP(c.in.sess.Tools)
}

// appendAudio takes one input_audio_buffer.append.
func (c *conversation) appendAudio(e *wire.InputAudioBufferAppend) {
	if c.media.TrackInput {
		c.send(&wire.Error{Type: wire.TypeInvalidRequest, Code: codeAppendOverTrack, EventID: e.ClientEventID(),
			Message: "input_audio_buffer.append is not accepted on this transport: " + errAppendOverTrack.Error() + "."})
		return
	}
	if c.in.sess.InputFormat == wire.PCM16 && len(e.Audio)%2 != 0 {
		c.send(wire.ErrAudioLength(c.in.sess.InputFormat, len(e.Audio), e.ClientEventID()))
		return
	}
	c.hear(e.Audio, e.ClientEventID())
}

// trackAudio takes input audio from a track (Media.TrackInput), already at 16 kHz: it joins the
// input pipeline after the decode step, hearStep at a time (see hear).
func (c *conversation) trackAudio(pcm []float32) {
	c.armIdle()
	if c.in.detector == nil && !c.in.input.fitsSamples(len(pcm)) {
		c.bufferFull("")
		return
	}
	step := hearRate * hearStep / 1000
	for len(pcm) > 0 && !c.outbox.closed.Load() {
		n := min(len(pcm), step)
		c.in.input.appendSamples(pcm[:n])
		if !c.heard(pcm[:n]) {
			return
		}
		pcm = pcm[n:]
	}
}

// hear runs one run of appended audio (in the session's input format) through the input pipeline,
// hearStep at a time. Without turn detection audio that would take the buffer past
// maxInputAudio is refused whole (bufferFull); under a detector a turn still held at that bound
// is ended there (endHeldTurn).
func (c *conversation) hear(raw []byte, eventID string) {
	c.armIdle()
	if c.in.detector == nil && !c.in.input.fits(len(raw)) {
		c.bufferFull(eventID)
		return
	}
	step := c.in.input.stepBytes()
	for len(raw) > 0 && !c.outbox.closed.Load() {
		n := min(len(raw), step)
		if !c.hearPiece(raw[:n], eventID) {
			return
		}
		raw = raw[n:]
	}
}

// hearPiece runs one step of input audio through the pipeline, in this order: decode and
// buffer it; the turn detector hears it before anything else does; the squelch says what of it
// is billed as heard; the meter and the quota count that; then the turn events it caused
// (speech_started, speech_stopped → commit → reply); then the partial transcript, the end of a
// turn held to the buffer's bound and the trim of the buffer between turns; last, the session
// limit. False when the rest of the audio is not to be heard (it could not be decoded, or the
// quota is used up).
func (c *conversation) hearPiece(raw []byte, eventID string) bool {
	pcm, err := c.in.input.append(raw)
	if err != nil {
		c.send(wire.ErrInvalidValue("audio", eventID, "Invalid 'audio': %v", err))
		return false
	}
	return c.heard(pcm)
}

// heard acts on one step of input audio, decoded and buffered at 16 kHz, once the input side
// has heard it (inputSide.hear: the turn detector, then the squelch): the failures are reported,
// what the squelch passed is billed, then the turn events act (see hearPiece).
func (c *conversation) heard(pcm []float32) bool {
	pcm = c.cleanInput(pcm) // echo and noise out before anything hears it (room.go)
	h := c.in.hear(pcm)
	if h.detectErr != nil {
		c.sendError(h.detectErr)
	}
	if h.squelchErr != nil {
		c.log.Error("squelch failed; billing the audio as heard", "err", h.squelchErr)
	}
	if !c.ledger.heard(h.speech) {
		return false
	}
	for _, ev := range h.turns {
		c.turnEvent(ev)
	}
	c.judgeSpeech()
	c.onsetSettle()
	c.checkIdleTimeout()
	held := c.in.pending != nil // speech judged: partials for its words, none streamed yet
	if stream := c.in.sess.Transcription != nil && !held; c.in.speechItem != "" && (stream || held || c.in.sess.TurnDetection.Type == wire.TurnSemanticVAD) {
		from := max(0, int(c.in.input.speechStart-c.in.input.start))
		c.in.partials.maybeDecode(decodeOn{ctx: c.ctx, ears: c.engines.Ears, work: &c.work, convID: c.convID, language: c.lang.partial(), send: c.send,
			logprobs: stream && c.in.sess.Includes(wire.IncludeLogprobs)}, c.in.input.pcm[from:], c.in.input.start+int64(from), c.in.speechItem, stream)
	}
	if c.in.detector != nil && c.in.speechItem != "" && c.in.input.bufferedMs() >= maxInputAudio {
		c.endHeldTurn()
	}
	if c.in.detector != nil && c.in.speechItem == "" {
		c.in.input.trimQuiet()
	}
	c.checkSessionLimit()
	return true
}

// bufferFull refuses audio that would take the buffer past maxInputAudio while the client
// commits: an append each time, by its event_id; track audio once, until a commit or a clear.
// What is buffered stays.
func (c *conversation) bufferFull(eventID string) {
	if eventID == "" {
		if c.in.input.refusedFull {
			return
		}
		c.in.input.refusedFull = true
	}
	c.send(&wire.Error{Type: wire.TypeInvalidRequest, Code: codeInputBufferFull, Param: "audio", EventID: eventID,
		Message: fmt.Sprintf("The input audio buffer already holds %.2f s of audio and may hold at most %d s: "+
			"commit it (input_audio_buffer.commit) or clear it before appending more.", c.in.input.bufferedMs()/1000, maxInputAudio/1000)})
}

// endHeldTurn ends a turn the detector still holds once the buffer holds maxInputAudio: as if
// the speaker had stopped at the end of what was heard (speech_stopped, the turn committed, a
// reply with create_response). The detector starts afresh, so speech that goes on is a new turn.
func (c *conversation) endHeldTurn() {
	c.log.Info("a turn held to the input buffer's bound was ended there", "bound_ms", maxInputAudio)
	c.turnEvent(turn.SpeechStopped{End: c.in.input.timeline})
	c.in.detector.Reset()
	c.in.partials.reset()
}

// turnEvent acts on one turn the detector found (positions on the session's timeline): the user took the floor (speech_started; a
// reply in progress is cut when the session says so) or yielded it (speech_stopped, the turn's
// audio committed, a reply started when the session says so); or on a hint about the turn held
// (semantic_vad: speculate on it, drop the speculation, decode the partial at a pause).
func (c *conversation) turnEvent(ev turn.Event) {
	switch ev := ev.(type) {
	case turn.EndLikely:
		if c.in.speechItem != "" {
			c.speculate(ev.Transcript)
		}
	case turn.EndUnlikely:
		c.in.dropSpeculation() // the speaker goes on
	case turn.Paused:
		if c.in.speechItem != "" {
			c.in.partials.paused = true // hear decodes the turn so far below, whatever the cadence
		}
	case turn.Onset:
		if c.in.speechItem == "" {
			c.onsetHeard()
		}
	case turn.OnsetLost:
		c.onsetLost(ev.At)
	case turn.SpeechStarted:
		if c.in.speechItem == "" {
			c.speechStarted(ev.Start)
		}
	case turn.SpeechStopped:
		if c.in.speechItem != "" {
			c.speechStopped(ev.End, ev.SpeechEnd)
		}
	}
}

// speechStarted: the user took the floor at timeline sample at: the input side starts the turn,
// then speech_started goes out and, when the session says so, the reply in progress is cut.
func (c *conversation) speechStarted(at int64) {
	onset := c.in.onset // the reply was paused on the speech's first window (interrupt.go)
	c.in.onset = false
	if c.holdSpeech(at) {
		return // judged before the client hears of it (interrupt.go)
	}
	if onset {
		defer func() { c.pause.release(); c.resumePlayer() }()
	}
	c.send(c.in.takeFloor(at))
	c.turns.answerSince.Store(0) // a new turn: the last one's reply is no longer awaited
	if c.in.sess.TurnDetection.InterruptResponse {
		c.cancelReply("", errTurnDetected)
		c.clearPlayback(false)
		c.room.dropFar()
	}
}

// speechStopped: the user yielded the floor at timeline sample at; speechEnd is where their last
// speech ended (0: not said). The input side hands over the turn; speech_stopped goes out, the
// turn is committed and, when the session says so, answered.
func (c *conversation) speechStopped(at, speechEnd int64) {
	if c.speechEnded(at, speechEnd) {
		return // no interruption: dropped, the reply resumes (interrupt.go)
	}
	y := c.in.yieldFloor(at, speechEnd)
	c.send(y.stopped)
	turnEnd := time.Now()
	if y.waited {
		c.srv.metrics.turnWait.Observe(y.wait.Seconds())
		turnEnd = turnEnd.Add(-y.wait)
	}
	if c.in.sess.TurnDetection.CreateResponse {
		c.turns.answerSince.Store(turnEnd.UnixNano()) // the reply's first audio observes it
	}
	c.commit(y.item, y.raw, y.pcm, turnSpan{gen: c.in.partials.gen.Load(), start: y.start})
	if !c.in.sess.TurnDetection.CreateResponse {
		y.spec.drop()
		return
	}
	// The reply decides on the speculation once the final transcript is in.
	if err := c.startReplyOn(wire.ResponseParams{}, "", y.spec); err != nil {
		c.send(err)
	}
}

// armIdle starts idle_timeout_ms's clock when a response has ended since the last input: at the
// timeline's end before this input, plus the audio the response spoke (the client plays it).
func (c *conversation) armIdle() {
	if spoken := c.turns.replyEnded.Swap(0); spoken > 0 {
		c.in.idleArmed = c.in.speechItem == ""
		c.in.idleFrom = c.in.input.timeline + (spoken-1)*hearRate/speakRate
	}
}

// checkIdleTimeout is server_vad's idle_timeout_ms, as OpenAI defines it: counted on the audio
// timeline from where the last response's audio finishes playing (its response.done, plus the
// audio it spoke), when that much audio has passed with no speech it sends
// input_audio_buffer.timeout_triggered (GA), commits the quiet audio as a user item and, with
// create_response, answers — so the mind can prompt a user who went silent (a phone call).
func (c *conversation) checkIdleTimeout() {
	td := c.in.sess.TurnDetection
	if !c.in.idleArmed || td.Type != wire.TurnServerVAD || td.IdleTimeoutMs <= 0 || c.in.speechItem != "" {
		return
	}
	if c.in.input.timeline-c.in.idleFrom < int64(td.IdleTimeoutMs)*hearRate/1000 {
		return
	}
	if c.replies.answering() {
		return
	}
	c.in.idleArmed = false
	start := max(c.in.idleFrom, c.in.input.start)
	item := wire.NewID("item_")
	c.send(wire.InputAudioBufferTimeoutTriggered{AudioStartMs: sampleMs(start), AudioEndMs: sampleMs(c.in.input.timeline), ItemID: item})
	raw, span := c.in.input.takeSpan(start, c.in.input.timeline)
	c.commit(item, raw, span, noSpan)
	if td.CreateResponse {
		if err := c.startReply(wire.ResponseParams{}, ""); err != nil {
			c.send(err)
		}
	}
}

// checkSessionLimit ends the conversation once it has carried the session limit's audio: the
// input timeline and the audio handed over in items.
func (c *conversation) checkSessionLimit() {
	if limit := c.srv.cfg.SessionLimit; audio.Duration(int(c.in.input.timeline+c.in.itemAudio), hearRate) >= limit {
		c.closeWith(wire.ErrSessionExpired(fmt.Sprintf("%d seconds of audio", int(limit/time.Second))),
			EndGoingAway, "session limit")
	}
}

// turnSpan places committed audio: the turn (partials.gen) it was heard in and the timeline
// sample of its first sample, so its final can reuse the log-mel the turn's partials built.
// start < 0 (noSpan): not known, the final decodes the whole window.
type turnSpan struct {
	gen, start int64
}

var noSpan = turnSpan{start: -1}

// commit makes the buffered audio a user item: committed, the item events, then its
// transcription on a worker (the reply waits for it: words, not bytes).
func (c *conversation) commit(itemID string, raw []byte, pcm []float32, span turnSpan) {
	if !c.awaitTranscribing(len(pcm)) {
		return
	}
	c.forgetTranscribed() // transcription.go
	// The audio is kept beside the item, as reply audio is, for retrieve: keptAudio bounds both.
	// Transcription reads pcm, not these bytes.
	e := &entry{item: wire.Item{ID: itemID, Type: wire.ItemMessage, Status: wire.ItemCompleted, Role: wire.RoleUser,
		Content: []wire.ContentPart{{Type: wire.InputAudio}}}, ready: make(chan struct{}), audio: raw, audioFormat: c.in.input.format}
	prev := c.hist.add(e, "") // counts the item, not its audio (keptAudio bounds that)
	c.hist.keepTurnAudio(e)
	c.senseTurn(e, pcm) // the frames and, for an omni mind, the audio it is shown (senses.go)
	c.send(wire.InputAudioBufferCommitted{PreviousItemID: prev, ItemID: itemID})
	it := cloneItem(e.item)
	c.send(wire.ConversationItemAdded{PreviousItemID: prev, Item: it})
	c.send(wire.ConversationItemDone{PreviousItemID: prev, Item: cloneItem(e.item)})
	c.ledger.turnEnded()

	transcribe := c.in.sess.Transcription != nil
	logprobs := transcribe && c.in.sess.Includes(wire.IncludeLogprobs)
	c.work.Go(func() { c.transcribe(e, pcm, span, transcribe, logprobs) })
}

// transcribe hears a committed item and records its transcript; with logprobs (the session's
// include[]) through LogprobEars, so the completed event carries the decoder's token
// log-probabilities (the partials' features are not reused then: their decode gives text only).
func (c *conversation) transcribe(e *entry, pcm []float32, span turnSpan, report, logprobs bool) {
	defer close(e.ready)
	defer c.transcribed(len(pcm))
	if c.engines.Ears == nil || len(pcm) == 0 {
		return
	}
	asked := time.Now()
	var text, language string
	var err error
	reused := false
	// A final detects when the session leaves the language open: the language found is this
	// item's (reported in its completed event) and the session's last (partials, the mind).
	h := Hearing{Conversation: c.convID, Language: c.lang.get(), Detected: func(code string) {
		language = code
		c.lang.heard(code)
	}}
	var lps []wire.Logprob
	if lpEars, ok := c.engines.Ears.(LogprobEars); ok && logprobs {
		text, lps, err = c.hearLogprobs(c.ctx, lpEars, pcm, h)
		reused = true
	} else if span.start >= 0 {
		text, reused, err = c.in.partials.mel.final(c.ctx, c.engines.Ears, h, span.gen, span.start, pcm)
	}
	if !reused {
		text, err = c.hearUtterance(c.ctx, pcm, h)
	}
	if err == nil {
		c.srv.metrics.finalDecode.Observe(time.Since(asked).Seconds())
	}
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Error("input transcription failed", "err", err)
			if report {
				c.send(wire.InputAudioTranscriptionFailed{ItemID: e.item.ID, ContentIndex: 0, Error: transcriptionFailure(err)})
			}
		}
		return
	}
	c.hist.edit(e, func(it *wire.Item) { it.Content[0].Transcript = &text })
	if report {
		c.send(wire.InputAudioTranscriptionCompleted{ItemID: e.item.ID, ContentIndex: 0, Transcript: text,
			Seconds: float64(len(pcm)) / hearRate, Logprobs: lps, Language: language})
	}
}

// hearWith asks ears for one window, as h when ears are shared.
func hearWith(ctx context.Context, ears Ears, h Hearing, pcm []float32) (string, error) {
	if shared, ok := ears.(SharedEars); ok {
		return shared.TranscribeAs(ctx, pcm, h)
	}
	return ears.Transcribe(ctx, pcm)
}

// earsWindow is the most audio Ears hears at once (Whisper's 30 s window).
const earsWindow = 30 * hearRate

// hearUtterance transcribes a committed utterance as the final h: one longer than earsWindow is
// heard window by window and the texts joined.
func (c *conversation) hearUtterance(ctx context.Context, pcm []float32, h Hearing) (string, error) {
	var parts []string
	for len(pcm) > 0 {
		n := min(len(pcm), earsWindow)
		text, err := hearWith(ctx, c.engines.Ears, h, pcm[:n])
		if err != nil {
			return strings.Join(parts, " "), err
		}
		if text = strings.TrimSpace(text); text != "" {
			parts = append(parts, text)
		}
		pcm = pcm[n:]
	}
	return strings.Join(parts, " "), nil
}

func (c *conversation) createItem(e *wire.ConversationItemCreate) {
	it := e.Item
	if it.ID == "" {
		it.ID = wire.NewID("item_")
	}
	if it.Type == wire.ItemFunctionCall && it.CallID == "" {
		it.CallID = wire.NewID("call_")
	}
	if it.Status == "" {
		it.Status = wire.ItemCompleted
	}
	if it.Type == wire.ItemMCPApprovalResponse {
		if err := c.checkApproval(it, e.ClientEventID()); err != nil {
			c.send(err)
			return
		}
	}
	if _, dup := c.hist.itemCopy(it.ID); dup {
		c.send(wire.ErrInvalidValue("item.id", e.ClientEventID(), "Invalid 'item.id': an item with id '%s' already exists.", it.ID))
		return
	}
	// Every byte the client hands over is counted, its audio too (with a transcript it is not
	// heard, so nothing else would bound it).
	ent := &entry{item: it, countAudio: true, held: itemBytes(it, true)}
	if e.PreviousItemID != "" && e.PreviousItemID != "root" {
		if _, ok := c.hist.itemCopy(e.PreviousItemID); !ok {
			c.send(wire.ErrItemNotFound("previous_item_id", e.PreviousItemID, e.ClientEventID()))
			return
		}
	}
	// A user audio part without a transcript is heard like committed audio, so the mind has words:
	// no more of it than the input buffer holds (decoded whole, it is 4 to 8 times its bytes).
	heard := it.Type == wire.ItemMessage && it.Role == wire.RoleUser && len(it.Content) > 0 &&
		it.Content[0].Type == wire.InputAudio && it.Content[0].Transcript == nil && len(it.Content[0].Audio) > 0
	if heard && c.in.sess.InputFormat.Millis(len(it.Content[0].Audio)) > maxInputAudio {
		ms := c.in.sess.InputFormat.Millis(len(it.Content[0].Audio))
		c.send(&wire.Error{Type: wire.TypeInvalidRequest, Code: codeAudioTooLong, Param: "item.content[0].audio", EventID: e.ClientEventID(),
			Message: fmt.Sprintf("Invalid 'item.content[0].audio': %.2f s of audio to transcribe, and an item may carry at most %d s "+
				"(split it, or send its transcript with it).", ms/1000, maxInputAudio/1000)})
		return
	}
	if !c.hist.hold(ent.held) {
		c.send(c.hist.conversationFull("item", e.ClientEventID()))
		return
	}
	var pcm []float32
	if heard {
		if samples, err := decodeInput(c.in.sess.InputFormat, it.Content[0].Audio); err == nil {
			pcm = audio.Resample(samples, c.in.sess.InputFormat.SampleRate(), hearRate)
			ent.ready = make(chan struct{})
		}
	}
	if len(pcm) > 0 {
		// Audio handed over in an item goes before the decoder like appended audio: it is metered
		// as heard and spends the quota (no squelch: the client chose to send all of it).
		if !c.ledger.handedOver(len(pcm)) {
			c.hist.hold(-ent.held) // not added: the conversation is closing
			return
		}
	}
	if ent.ready != nil && !c.awaitTranscribing(len(pcm)) {
		c.hist.hold(-ent.held) // not added: the conversation ended
		return
	}
	prev := c.hist.add(ent, e.PreviousItemID)
	if it.Type == wire.ItemMessage && it.Role == wire.RoleUser {
		c.senseTurn(ent, pcm) // senses.go
	}
	c.send(wire.ConversationItemAdded{PreviousItemID: prev, Item: cloneItem(it)})
	c.send(wire.ConversationItemDone{PreviousItemID: prev, Item: cloneItem(it)})
	if it.Type == wire.ItemMCPApprovalResponse {
		c.approvalAnswered(it, e.ClientEventID())
	}
	if ent.ready != nil {
		transcribe := c.in.sess.Transcription != nil
		logprobs := transcribe && c.in.sess.Includes(wire.IncludeLogprobs)
		c.work.Go(func() { c.transcribe(ent, pcm, noSpan, transcribe, logprobs) })
	}
	if len(pcm) > 0 {
		c.in.itemAudio += int64(len(pcm))
		c.checkSessionLimit()
	}
}
