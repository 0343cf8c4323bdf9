package session

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/sentence"
	"github.com/voiced/voiced/wire"
)

// Why a reply's context was cancelled.
var (
	errTurnDetected    = errors.New("the user started speaking")
	errClientCancelled = errors.New("response.cancel")
	errQuota           = errors.New("quota exceeded")
)

// deltaSamples is the audio per output delta (200 ms at 24 kHz): a barge-in stops the reply
// within one delta, and a truncate can land inside a sentence.
const deltaSamples = 4800

// splitChars batches later sentences up to this size for synthesis (the first goes alone).
const splitChars = 200

// reply is one response writing the conversation.
type reply struct {
	id        string
	ctx       context.Context // cancelled by barge-in or response.cancel (cause says which)
	cancel    context.CancelCauseFunc
	cancelled bool          // under replies.mu
	done      chan struct{} // closed when its response.done is queued
	prev      chan struct{} // the previous reply's done, when it was still finishing
	// outOfBand: response.create with conversation "none": its items are not written to the
	// conversation, it does not block other responses, and only response.cancel naming it stops it.
	outOfBand bool
	// spec is the turn's speculative answer (speculate.go), owned by the reply's worker: adopted
	// when it asked what the reply asks, else dropped.
	spec *speculation
	// metadata is response.create's, returned in response.created and response.done.
	metadata map[string]string
	// approved, when set, is an MCP call the client approved: the response runs it (mcp.go)
	// instead of asking the mind.
	approved *mcpPending
	// ending (under replies.mu): the reply is sending its last events after MCP items; a
	// response.create arriving now (the Agents SDK's, on the call's conversation.item.done) waits
	// for them instead of being refused.
	ending bool
}

// maxOutOfBand is how many out-of-band responses (conversation "none") one conversation may run at
// once: each is a mind call and a synthesis, and a burst within the event rate could otherwise
// start hundreds. OpenAI documents no number; a client classifying or summarising beside the
// conversation runs one or two.
const maxOutOfBand = 8

// codeImagesRefused names a reply failed because the mind's server does not take images.
const codeImagesRefused = "image_input_not_supported"

// codeTooManyResponses names the refusal of one more.
const codeTooManyResponses = "too_many_active_responses"

// startReply begins a response on a worker; a response still writing the conversation is an
// error (out-of-band responses run beside it).
func (c *conversation) startReply(p wire.ResponseParams, eventID string) *wire.Error {
	return c.startReplyOn(p, eventID, nil)
}

// startReplyOn is startReply handed the turn's speculation (nil: none), which it owns from here.
func (c *conversation) startReplyOn(p wire.ResponseParams, eventID string, spec *speculation) *wire.Error {
	return c.startReplyWith(p, eventID, spec, nil)
}

// startReplyWith is startReplyOn for a response that runs an approved MCP call (approved: nil for
// any other).
func (c *conversation) startReplyWith(p wire.ResponseParams, eventID string, spec *speculation, approved *mcpPending) *wire.Error {
	ctx, cancel := context.WithCancelCause(c.ctx)
	r := &reply{id: wire.NewID("resp_"), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		outOfBand: p.Conversation == "none", spec: spec, metadata: p.Metadata, approved: approved}
	// A response's own input items are kept while it runs: counted toward the conversation's
	// bytes until it ends. A response that writes the conversation is refused once the
	// conversation is full (only what the conversation makes itself takes it there: a reply's
	// output passes the bound by at most one reply).
	inBytes := 0
	if p.Input.Set() {
		for _, it := range p.Input.Value {
			inBytes += itemBytes(it, true)
		}
	}
	if !c.hist.hold(inBytes) {
		cancel(nil)
		spec.drop()
		return c.hist.conversationFull("response.input", eventID)
	}
	refuse := func(we *wire.Error) *wire.Error {
		c.hist.hold(-inBytes)
		cancel(nil)
		spec.drop()
		return we
	}
	if !r.outOfBand && c.hist.full() {
		return refuse(c.hist.conversationFull("response", eventID))
	}
	if we := c.replies.admit(r, eventID); we != nil {
		return refuse(we)
	}

	cfg := c.in.sess.ForResponse(p)
	var input []wire.Item
	if p.Input.Set() {
		input = p.Input.Value
	}
	parts := c.replyParts()
	c.work.Go(func() {
		defer cancel(nil)
		defer c.hist.hold(-inBytes)
		parts.respond(r, cfg, input)
	})
	return nil
}

// cancelReply cancels the active response (id "" = whichever) or the out-of-band one id names;
// false when there is none to cancel.
func (c *conversation) cancelReply(id string, cause error) bool {
	return c.replies.cancel(id, cause)
}

// pipeDepth bounds the pieces the mind may run ahead of the speaking (a bounded pipeline: the
// mind streams sentence k+1 while sentence k is synthesized and sent).
const pipeDepth = 8

// replyRun is one response's output state, owned by its writer goroutine (the one that runs the
// ops the mind's stream queues, in order); splitter belongs to the mind's goroutine.
type replyRun struct {
	p    *replyParts
	r    *reply
	cfg  wire.Session
	resp wire.Response
	// ctx is r.ctx, also cancelled (with the cause) when the writer or the mind fails: either
	// side's failure stops the other.
	ctx    context.Context
	cancel context.CancelCauseFunc
	ops    chan func() error

	speak    bool // audio out (else text)
	splitter *sentence.Splitter
	opened   bool             // the mind's goroutine queued openMessage
	out      *audio.Resampler // 24 kHz → 8 kHz for G.711
	codec    audio.Encoding   // the output format's

	msg     *entry
	msgIdx  int
	text    strings.Builder // the message's text (text out) or transcript (audio out)
	outputs []*entry
	calls   map[int]*entry
	spoken  int // 24 kHz samples sent
	// mcpRoutes are the MCP tools offered (by name), mcpCalls the reply's MCP items by call index,
	// mcpOrder the same in order (mcp.go).
	mcpRoutes map[string]mcpTarget
	mcpCalls  map[int]*mcpOut
	mcpOrder  []*mcpOut
	// adopted is the speculation the reply took its answer from (nil: none): its first sentence's
	// audio, synthesized while the turn was held, is sent in place of a synthesis (say).
	adopted *speculation
	pieces  int // pieces said (the writer's)
	// stop and usage are the mind's answer's (set once it returned): why it stopped early, and
	// its tokens.
	stop  string
	usage *mind.Usage
}

// replyParts are the parts of the conversation a reply works with, and nothing else of it:
// the items (hist), the outbox (send), the ledger, the replies running, the handoff to the input
// goroutine, the engines it speaks and thinks with. Set once by the conversation (replyParts);
// every one is safe from the reply's goroutines.
type replyParts struct {
	ctx     context.Context // the conversation's: its end ends every reply
	log     *slog.Logger
	metrics *metrics
	convID  string
	send    func(wire.ServerEvent) // the outbox
	hist    *history
	window  *mindWindow
	budget  int // Config.MindContextTokens
	ledger  *ledger
	replies *replies
	turns   *handoff
	voice   Voice
	mind    mind.Mind
	mcp     *mcpState        // the session's MCP servers
	player  Player           // the transport's (nil: audio in delta events)
	room    *room            // the echo canceller: the audio sent is its reference
	lang    *hearingLanguage // the language the user was last heard in, for the mind
	pause   *pauseGate       // holds the audio while speech is judged (interrupt.go)
	// idleTimeout restarts the idle timer at the reply's end; now is the server's clock.
	idleTimeout time.Duration
	now         func() time.Time
	// quotaExceeded stops the replies and closes the conversation (the ledger's exhausted);
	// answered observes the answer latency at a reply's first audio on a player.
	quotaExceeded func()
	answered      func()
	// sensesCfg says what the mind sees and hears beside the words (senses.go).
	sensesCfg SensesConfig
}

// replyParts hands a reply the parts it works with.
func (c *conversation) replyParts() *replyParts {
	return &replyParts{ctx: c.ctx, log: c.log, metrics: c.srv.metrics, convID: c.convID, send: c.send,
		hist: &c.hist, window: &c.window, budget: c.srv.cfg.MindContextTokens, ledger: &c.ledger, replies: &c.replies, turns: &c.turns,
		voice: c.engines.Voice, mind: c.engines.Mind, mcp: &c.mcp, player: c.media.Player, room: &c.room, lang: &c.lang, pause: &c.pause,
		idleTimeout: c.srv.cfg.IdleTimeout, now: c.srv.cfg.Now, quotaExceeded: c.quotaExceeded, answered: c.answered,
		sensesCfg: c.srv.cfg.Senses}
}

// respond runs the mind and speaks its answer.
func (p *replyParts) respond(r *reply, cfg wire.Session, input []wire.Item) {
	defer r.spec.drop() // cancelled when done with; counted as discarded unless adopted
	if r.prev != nil {
		select {
		case <-r.prev:
		case <-p.ctx.Done():
			return
		}
	}
	convID := p.convID
	if r.outOfBand {
		convID = "" // null: not written to the conversation
	}
	run := &replyRun{p: p, r: r, cfg: cfg, resp: wire.NewResponse(r.id, convID, cfg),
		speak: !cfg.TextOnly && p.voice != nil, calls: map[int]*entry{}}
	run.resp.Metadata = r.metadata
	if run.speak {
		run.splitter = sentence.NewSplitter(sentence.Options{FirstAlone: true, SplitChars: splitChars})
		run.codec = codecOf(cfg.OutputFormat)
		if cfg.OutputFormat.SampleRate() != speakRate {
			run.out, _ = audio.NewResampler(speakRate, cfg.OutputFormat.SampleRate())
		}
	}
	created := run.resp
	created.Output = nil
	p.send(wire.ResponseCreated{Response: created})
	p.send(wire.RateLimitsUpdated{RateLimits: p.ledger.rateLimits(p.now())})

	err := p.waitTranscripts(r.ctx)
	var mcpTools []mind.Tool
	if err == nil && r.approved == nil {
		mcpTools, run.mcpRoutes, err = p.mcp.offer(r.ctx, cfg)
	}
	if r.approved != nil {
		if err == nil {
			err = run.runApproved(r.approved)
		}
	} else if err == nil {
		win := p.window
		if input != nil || r.outOfBand {
			win = nil // a response beside the conversation does not move its window
		}
		items, sense := p.hist.snapshot(input), p.senses()
		req := mindRequest(cfg, p.lang.lastDetected(), win.view(items, cfg.Truncation, lessSenses(p.budget, items, sense)), sense)
		req.Tools = append(req.Tools, mcpTools...)
		m := p.mind
		if r.spec.adopt(req) {
			m = timedMind{Mind: r.spec, first: p.metrics.mindFirst}
			run.adopted = r.spec
		} else {
			r.spec.drop()
		}
		err = run.stream(m, req)
	}
	run.finish(err)
}

// mindRequest is what a reply configured so asks the mind about items.
// heard is the language the user's last turn was detected in (hearingLanguage.lastDetected).
func mindRequest(cfg wire.Session, heard string, items []wire.Item, sense senseFunc) mind.Request {
	req := mind.Request{Instructions: mindInstructions(cfg, heard), History: mindMessages(items, sense), ToolChoice: toolChoice(cfg.ToolChoice),
		Temperature: cfg.Temperature, MaxOutputTokens: cfg.MaxOutputTokens, ParallelToolCalls: &cfg.ParallelToolCalls}
	for _, t := range cfg.Tools {
		req.Tools = append(req.Tools, mind.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if cfg.ToolChoice.Mode == wire.ToolChoiceNone {
		req.Tools = nil
	}
	return req
}

// stream runs the mind (the conversation's, or a speculation it adopted) on this goroutine and writes the reply on another: the mind's deltas
// become ops (open the message, say a sentence, send text, extend a call) queued in order, so the
// events keep the order they would have on one goroutine while synthesis overlaps the mind.
// It returns when both are done; the writer's error wins (a quota, a synthesis failure), else
// the mind's.
func (run *replyRun) stream(m mind.Mind, req mind.Request) error {
	run.ctx, run.cancel = context.WithCancelCause(run.r.ctx)
	defer run.cancel(nil)
	run.ops = make(chan func() error, pipeDepth)
	writerDone := make(chan error, 1)
	go func() {
		var err error
		for op := range run.ops {
			if err == nil {
				if err = op(); err != nil {
					run.cancel(err)
				}
			}
		}
		writerDone <- err
	}()
	answer, err := m.Answer(run.ctx, req, run.delta)
	run.stop, run.usage = answer.Stop, answer.Usage
	if err == nil && run.speak && run.splitter != nil {
		if rest := run.splitter.Flush(); rest != "" {
			err = run.queue(func() error { return run.say(rest) })
		}
	}
	if err == nil && run.stop == "" {
		// The answer is whole: its MCP calls run on the writer (which made them), in order,
		// after what it said.
		err = run.queue(func() error {
			for _, o := range run.mcpOrder {
				if err := run.runMCP(o); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		run.cancel(err) // the mind failed: stop speaking what it queued
	}
	close(run.ops)
	if werr := <-writerDone; werr != nil && !errors.Is(werr, context.Canceled) {
		return werr
	}
	return err
}

// queue hands an op to the writer, waiting while the pipeline is full.
func (run *replyRun) queue(op func() error) error {
	select {
	case run.ops <- op:
		return nil
	case <-run.ctx.Done():
		return context.Cause(run.ctx)
	}
}

func toolChoice(tc wire.ToolChoice) string {
	if tc.Mode == wire.ToolChoiceFunction {
		return tc.Name
	}
	return tc.Mode
}

// waitTranscripts waits until every committed user audio item has its words.
func (p *replyParts) waitTranscripts(ctx context.Context) error {
	pending := p.hist.transcribing
	if p.sensesCfg.MindAudio == MindAudioReplace {
		pending = p.hist.transcribingUnheard // the mind hears those turns, not their words
	}
	for _, ch := range pending() {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// delta takes one piece of the mind's answer (on the mind's goroutine) and queues what it
// means for the writer.
func (run *replyRun) delta(d mind.Delta) error {
	if err := run.ctx.Err(); err != nil {
		return context.Cause(run.ctx)
	}
	if d.Text != "" {
		if !run.opened {
			run.opened = true
			if err := run.queue(func() error { run.openMessage(); return nil }); err != nil {
				return err
			}
		}
		if run.speak {
			for _, piece := range run.splitter.Push(d.Text) {
				if err := run.queue(func() error { return run.say(piece) }); err != nil {
					return err
				}
			}
		} else {
			text := d.Text
			if err := run.queue(func() error {
				run.text.WriteString(text)
				run.p.send(wire.ResponseTextDelta{PartRef: run.part(), Delta: text})
				return nil
			}); err != nil {
				return err
			}
		}
	}
	if d.Call != nil {
		call := *d.Call
		if err := run.queue(func() error {
			if !run.mcpDelta(&call) {
				run.callDelta(&call)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

func (run *replyRun) part() wire.PartRef {
	return wire.PartRef{ResponseID: run.r.id, ItemID: run.msg.item.ID, OutputIndex: run.msgIdx, ContentIndex: 0}
}

// openMessage starts the assistant message item and its content part, once.
func (run *replyRun) openMessage() {
	if run.msg != nil {
		return
	}
	p := run.p
	e := &entry{item: wire.Item{ID: wire.NewID("item_"), Type: wire.ItemMessage, Status: wire.ItemInProgress,
		Role: wire.RoleAssistant, Content: []wire.ContentPart{}}}
	run.msg, run.msgIdx = e, len(run.outputs)
	run.outputs = append(run.outputs, e)
	p.send(wire.ResponseOutputItemAdded{ResponseID: run.r.id, OutputIndex: run.msgIdx, Item: cloneItem(e.item)})
	run.addToConversation(e)
	part := run.contentPart()
	p.hist.edit(e, func(it *wire.Item) { it.Content = []wire.ContentPart{part} })
	p.send(wire.ResponseContentPartAdded{ResponseID: run.r.id, ItemID: e.item.ID, OutputIndex: run.msgIdx, ContentIndex: 0, Part: part})
}

// contentPart is the message's part as it stands.
func (run *replyRun) contentPart() wire.ContentPart {
	text := run.text.String()
	if run.speak {
		return wire.ContentPart{Type: wire.OutputAudio, Transcript: &text}
	}
	return wire.ContentPart{Type: wire.OutputText, Text: text}
}

// say synthesizes one piece and sends its transcript and audio as each exists; a cancelled reply
// stops within one delta.
func (run *replyRun) say(piece string) error {
	piece = strings.TrimSpace(piece)
	if piece == "" {
		return nil
	}
	if err := run.ctx.Err(); err != nil {
		return err
	}
	p := run.p
	if run.text.Len() > 0 {
		piece = " " + piece
	}
	run.text.WriteString(piece)
	p.send(wire.ResponseAudioTranscriptDelta{PartRef: run.part(), Delta: piece})
	sent := 0
	err := run.synthesize(strings.TrimSpace(piece), func(pcm []int16) error {
		for len(pcm) > 0 {
			if err := run.ctx.Err(); err != nil {
				return err
			}
			if err := p.pause.wait(run.ctx); err != nil {
				return err
			}
			n := min(len(pcm), deltaSamples)
			if p.player != nil {
				// Over a player the seconds are what it plays: takePlayed counts and spends them
				// (in meterNow, and each second), so nothing is reserved here.
				if err := run.play(piece, pcm[:n]); err != nil {
					return err
				}
				p.room.far(pcm[:n])
				p.ledger.meterNow()
				sent += n
				pcm = pcm[n:]
				if errors.Is(context.Cause(run.ctx), errQuota) {
					return errQuota
				}
				continue
			}
			// The budget is taken before the audio goes out, and a delta is cut to what is left.
			// speakMu keeps the outbox in reserve order: a delta reserved by one reply is queued
			// before the quota close another reply queues once the budget is gone, so every second
			// metered reaches the client.
			want := time.Duration(n) * time.Second / speakRate
			p.ledger.speakMu.Lock()
			got := p.ledger.reserve(want)
			if got < want {
				n = int(got * speakRate / time.Second)
			}
			if n > 0 {
				// Durable before it goes out (the meter's group commit, issue 26): a kill -9 then
				// bills at most this one delta that the client never got, never one it got.
				p.ledger.spokenSamples.Add(int64(n))
				p.ledger.meterNow()
				run.emitAudio(run.encode(pcm[:n]))
				p.room.far(pcm[:n])
			}
			if got < want {
				p.quotaExceeded()
			}
			p.ledger.speakMu.Unlock()
			if n > 0 {
				sent += n
				pcm = pcm[n:]
			}
			p.ledger.recordedSpeech.Add(int64(got)) // after its record: see refreshBudget
			if got < want {
				return errQuota
			}
		}
		return nil
	})
	if run.out != nil && err == nil {
		// The resampler holds its delay back: a piece's audio ends with the piece.
		if tail := run.out.Flush(); len(tail) > 0 && p.player == nil {
			run.emitAudio(run.codec.Encode(audio.Float32ToInt16(tail)))
		}
		run.out.Reset()
	}
	run.spoken += sent
	if sent > 0 && !run.r.outOfBand {
		p.turns.assistantAudio.Store(true)
	}
	p.hist.spoke(run.msg, piece, sent)
	return err
}

// synthesize speaks piece through the Voice, or, for the first piece of an adopted speculation,
// hands on the audio the speculation already synthesized for it.
func (run *replyRun) synthesize(piece string, emit func([]int16) error) error {
	first := run.pieces == 0
	run.pieces++
	if first && run.adopted != nil {
		pcm, ok, err := run.adopted.firstAudio(run.ctx, piece, run.cfg.Voice, run.cfg.Speed)
		if err != nil {
			return err
		}
		if ok {
			if len(pcm) == 0 {
				return nil
			}
			return emit(pcm)
		}
	}
	return run.p.voice.Speak(run.ctx, piece, run.cfg.Voice, run.cfg.Speed, emit)
}

// emitAudio sends one audio delta event and keeps its bytes on the message for retrieve.
func (run *replyRun) emitAudio(b []byte) {
	run.p.send(wire.ResponseAudioDelta{PartRef: run.part(), Delta: b})
	if !run.r.outOfBand {
		run.p.hist.keepAudio(run.msg, run.cfg.OutputFormat, b)
	}
}

// encode renders 24 kHz PCM16 in the output format.
func (run *replyRun) encode(pcm []int16) []byte {
	if run.out == nil {
		return run.codec.Encode(pcm)
	}
	return run.codec.Encode(audio.Float32ToInt16(run.out.Process(audio.Int16ToFloat32(pcm))))
}

// callDelta starts or extends a function_call item.
func (run *replyRun) callDelta(d *mind.CallDelta) {
	p := run.p
	e := run.calls[d.Index]
	if e == nil {
		callID := d.ID
		if callID == "" {
			callID = wire.NewID("call_")
		}
		e = &entry{item: wire.Item{ID: wire.NewID("item_"), Type: wire.ItemFunctionCall, Status: wire.ItemInProgress,
			CallID: callID, Name: d.Name}}
		run.calls[d.Index] = e
		idx := len(run.outputs)
		run.outputs = append(run.outputs, e)
		p.send(wire.ResponseOutputItemAdded{ResponseID: run.r.id, OutputIndex: idx, Item: cloneItem(e.item)})
		run.addToConversation(e)
	}
	if d.Name != "" {
		p.hist.edit(e, func(it *wire.Item) {
			if it.Name == "" {
				it.Name = d.Name
			}
		})
	}
	if d.Arguments == "" {
		return
	}
	p.hist.edit(e, func(it *wire.Item) { it.Arguments += d.Arguments })
	p.send(wire.ResponseFunctionCallArgumentsDelta{ResponseID: run.r.id, ItemID: e.item.ID,
		OutputIndex: run.outputIndex(e), CallID: e.item.CallID, Delta: d.Arguments})
}

// addToConversation writes an output item into the conversation (not for out-of-band responses).
func (run *replyRun) addToConversation(e *entry) {
	if run.r.outOfBand {
		return
	}
	prev := run.p.hist.add(e, "")
	run.p.send(wire.ConversationItemAdded{PreviousItemID: prev, Item: cloneItem(e.item)})
}

func (run *replyRun) outputIndex(e *entry) int {
	for i, o := range run.outputs {
		if o == e {
			return i
		}
	}
	return -1
}

// finish closes every item and sends response.done: completed, cancelled (turn_detected or
// client_cancelled), or failed (an error event first; the session lives on).
func (run *replyRun) finish(err error) {
	p, r := run.p, run.r
	if p.ctx.Err() != nil {
		close(r.done)
		return // the conversation is over: nobody to tell
	}
	status, itemStatus := wire.ResponseCompleted, wire.ItemCompleted
	var details *wire.StatusDetails
	switch {
	case r.ctx.Err() != nil:
		status, itemStatus = wire.ResponseCancelled, wire.ItemIncomplete
		reason := wire.ReasonClientCancelled
		if errors.Is(context.Cause(r.ctx), errTurnDetected) {
			reason = wire.ReasonTurnDetected
		}
		details = &wire.StatusDetails{Type: wire.ResponseCancelled, Reason: reason}
	case err != nil:
		status, itemStatus = wire.ResponseFailed, wire.ItemIncomplete
		we := replyError(err)
		details = &wire.StatusDetails{Type: wire.ResponseFailed, Error: we}
		p.log.Error("response failed", "response", r.id, "err", err)
		p.send(we)
	case run.stop != "":
		status, itemStatus = wire.ResponseIncomplete, wire.ItemIncomplete
		details = &wire.StatusDetails{Type: wire.ResponseIncomplete, Reason: run.stop}
	}

	if len(run.mcpOrder) > 0 {
		p.replies.ending(r)
	}
	for i, e := range run.outputs {
		var part *wire.ContentPart
		if e == run.msg {
			p := run.contentPart()
			part = &p
		}
		it, prev := p.hist.closeOutput(e, itemStatus, part)
		if e == run.msg {
			ref := run.part()
			if run.speak {
				p.send(wire.ResponseAudioDone{PartRef: ref})
				p.send(wire.ResponseAudioTranscriptDone{PartRef: ref, Transcript: run.text.String()})
			} else {
				p.send(wire.ResponseTextDone{PartRef: ref, Text: run.text.String()})
			}
			p.send(wire.ResponseContentPartDone{ResponseID: r.id, ItemID: it.ID, OutputIndex: i, ContentIndex: 0, Part: it.Content[0]})
		} else if it.Type == wire.ItemFunctionCall {
			p.send(wire.ResponseFunctionCallArgumentsDone{ResponseID: r.id, ItemID: it.ID, OutputIndex: i,
				CallID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		}
		p.send(wire.ResponseOutputItemDone{ResponseID: r.id, OutputIndex: i, Item: it})
		if !r.outOfBand {
			p.send(wire.ConversationItemDone{PreviousItemID: prev, Item: cloneItem(it)})
		}
	}

	done := run.resp
	done.Status, done.StatusDetails = status, details
	done.Output = make([]wire.Item, 0, len(run.outputs))
	for _, e := range run.outputs {
		it := p.hist.clone(e)
		for i := range it.Content {
			it.Content[i].Audio = nil
		}
		done.Output = append(done.Output, it)
	}
	done.Usage = &wire.Usage{
		HeardSeconds:  float64(p.ledger.heardForReply.Swap(0)) / hearRate,
		SpokenSeconds: float64(run.spoken) / speakRate,
	}
	if u := run.usage; u != nil {
		done.Usage.InputTextTokens, done.Usage.OutputTextTokens, done.Usage.CachedTextTokens = u.InputTokens, u.OutputTokens, u.CachedTokens
	}
	p.replies.end(r, p.idleTimeout)
	if !r.outOfBand {
		// Before response.done goes out: a client's next append, sent on reading it, must find
		// the idle clock's start (TestIdleTimeoutTriggered failed in CI when this came after).
		p.turns.replyEnded.Store(1 + int64(run.spoken))
	}
	p.send(wire.ResponseDone{Response: done})
	close(r.done)
	p.ledger.turnEnded()
}

// replyError is the error event for a failed reply, safe to show.
func replyError(err error) *wire.Error {
	var me *mind.Error
	if errors.As(err, &me) {
		if we := refusedSense(err, me); we != nil {
			return we
		}
	}
	if errors.As(err, &me) {
		return &wire.Error{Type: wire.TypeServer, Code: codeResponseFailed, Message: "The mind failed: " + me.Message + "."}
	}
	return &wire.Error{Type: wire.TypeServer, Code: codeResponseFailed, Message: "The response failed: see the server log."}
}
