package session

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// history is the conversation's items, under its own lock: the input goroutine adds, deletes,
// truncates and retrieves them; transcription workers fill in transcripts; replies write their
// output items and the audio they kept, and read the whole for the mind. Every method takes mu
// itself (those named ...Locked expect it held). An entry's fields are only touched under mu,
// but for an item's id, type, role and call id, which never change once it is added.
//
// It also follows the reply audio handed to a Media.Player (playing), under the same lock: a
// cut truncates the message being played, exactly to the sample played.
type history struct {
	mu    sync.Mutex
	items []*entry
	byID  map[string]*entry // items by id (ids are unique: item.create refuses a taken one)
	// held is the bytes the items keep (Config.ConversationBytes, limit), and running responses'
	// input.
	held  int
	limit int
	// playing is the reply audio handed to Media.Player: where the next sample queued will play
	// on the player's timeline, and the assistant message being played (nil without a player).
	playing playback
}

// entry is one conversation item with what the session keeps beside it.
type entry struct {
	item wire.Item
	// ready is closed once a committed user audio item's transcript is known (nil: nothing to wait for).
	ready chan struct{}
	// spoken is an assistant audio item's audio, sentence by sentence, for truncation.
	spoken []spokenPiece
	// audio is an assistant audio item's audio bytes as sent, or a committed user turn's as the
	// client sent them (in audioFormat), for retrieve; see keptAudio. audioLost: it lost them to
	// that bound, and keeps none from then on.
	audio       []byte
	audioFormat wire.AudioFormat
	audioLost   bool
	// truncated: a conversation.item.truncate cut it to what the client played; the reply still
	// writing it (its last piece, its response.done) must not extend or restore it.
	truncated bool
	// held is the bytes this item keeps that count toward Config.ConversationBytes (itemBytes), in
	// history.held until the item is deleted; countAudio: its audio counts too (a client handed it
	// over in conversation.item.create; committed and reply audio is bounded by keptAudio instead).
	held       int
	countAudio bool
	// sense is what a user turn shows the mind beside its words (senses.go; nil: nothing, a
	// pointer so that itemOverhead holds).
	sense *sensed
}

// DefaultConversationBytes bounds what one conversation's items keep: every byte a client hands over
// in conversation.item.create (ids, text, transcripts, image data URIs, call names, arguments and
// outputs, audio), the text and transcripts the conversation's own turns and replies add, each
// item's and content part's own size, and a running response's input items. Audio committed from
// the input buffer and reply audio kept for retrieve count toward keptAudio instead. A model's context is ~128k tokens, about half a MiB of text: 32 MiB is far past any
// conversation a mind can read. Past it a conversation.item.create or a response.create is
// refused conversation_too_large; a conversation.item.delete makes room.
const DefaultConversationBytes = 32 << 20

// MinConversationBytes is the least Config.ConversationBytes may be: a few dozen ordinary turns.
// An operator short of memory lowers --max-conversations rather than cutting conversations short.
const MinConversationBytes = 1 << 20

// codeConversationTooLarge names that refusal.
const codeConversationTooLarge = "conversation_too_large"

// itemOverhead and partOverhead are what an item (its entry, the slice slot and the id map's slot
// that hold it) and a content part cost in memory besides the bytes they point to (unsafe.Sizeof
// on 64-bit, rounded up; TestItemOverhead checks them): counted so that a million empty items
// cost what they cost.
const (
	itemOverhead = 320
	partOverhead = 96
)

// itemBytes is what it keeps in memory: its strings, its content parts' text, transcripts, image
// data URIs and (withAudio) audio, and the overheads above.
func itemBytes(it wire.Item, withAudio bool) int {
	n := itemOverhead + len(it.ID) + len(it.Name) + len(it.Arguments) + len(it.Output) + len(it.CallID) + mcpItemBytes(it.MCP)
	for _, p := range it.Content {
		n += partOverhead + len(p.Text) + len(p.ImageURL) + len(p.Detail)
		if p.Transcript != nil {
			n += len(*p.Transcript)
		}
		if withAudio {
			n += len(p.Audio)
		}
	}
	return n
}

// conversationFull is the refusal of what would take a conversation past Config.ConversationBytes.
func (h *history) conversationFull(param, eventID string) *wire.Error {
	return &wire.Error{Type: wire.TypeInvalidRequest, Code: codeConversationTooLarge, Param: param, EventID: eventID,
		Message: fmt.Sprintf("This conversation already holds the most it may (%s of items: their text, ids and audio, "+
			"and the input of its running responses): delete items (conversation.item.delete) before adding more.", sizeText(h.limit))}
}

// sizeText writes n bytes for a person: in MiB when whole.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// keptAudio bounds the audio a conversation keeps for conversation.item.retrieve, the user's
// committed turns (as the client sent them, in the input format) and the assistant's replies
// (as sent) alike: the newest items' audio up to this much in all; older items lose theirs
// (retrieve then carries the transcript only), and an item longer than this on its own keeps
// none. At pcm16 24 kHz that is 13.7 MiB per conversation, where committed user audio was kept
// for the whole --session-limit (~173 MB an hour). Audio handed over in conversation.item.create
// counts toward Config.ConversationBytes instead.
const keptAudio = 5 * 60 * 1000 // ms

// keepAudio appends reply audio as sent to its item, then drops the oldest items' audio until
// the conversation keeps no more than keptAudio.
func (h *history) keepAudio(e *entry, f wire.AudioFormat, b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.audioLost || e.truncated || h.byID[e.item.ID] != e {
		return
	}
	e.audioFormat = f
	e.audio = append(e.audio, b...)
	h.trimKeptAudioLocked(e)
}

// keepTurnAudio bounds the kept audio once a committed turn's item (e, with its audio) is added.
func (h *history) keepTurnAudio(e *entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trimKeptAudioLocked(e)
}

// trimKeptAudio drops the oldest items' kept audio until the conversation keeps no more than
// keptAudio; e (the item whose audio just grew) keeps its own unless it alone is longer. Under mu.
func (h *history) trimKeptAudioLocked(e *entry) {
	total := 0.0
	for _, o := range h.items {
		total += o.audioFormat.Millis(len(o.audio))
	}
	for _, o := range h.items {
		if total <= keptAudio {
			break
		}
		if len(o.audio) > 0 && (o != e || o.audioFormat.Millis(len(o.audio)) > keptAudio) {
			total -= o.audioFormat.Millis(len(o.audio))
			o.audio, o.audioLost = nil, true
		}
	}
}

// retrieved returns a copy of item id with the audio it keeps (conversation.item.retrieve).
func (h *history) retrieved(id string) (wire.Item, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byID[id]
	if e == nil {
		return wire.Item{}, false
	}
	it := cloneItem(e.item)
	if len(e.audio) > 0 {
		for j := range it.Content {
			if t := it.Content[j].Type; t == wire.OutputAudio || t == wire.InputAudio {
				it.Content[j].Audio = slices.Clone(e.audio)
			}
		}
	}
	return it, true
}

// spokenPiece is one sentence of reply audio: its text and how many 24 kHz samples were sent.
type spokenPiece struct {
	text    string
	samples int
}

// add inserts e after previous ("" appends at the end, "root" at the start), counts what it
// keeps (recount) and returns the id of the item before it ("" when first).
func (h *history) add(e *entry, previous string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	at := len(h.items)
	switch previous {
	case "":
	case "root":
		at = 0
	default:
		if i := h.indexOf(previous); i >= 0 {
			at = i + 1
		}
	}
	h.items = slices.Insert(h.items, at, e)
	if h.byID == nil {
		h.byID = map[string]*entry{}
	}
	h.byID[e.item.ID] = e
	h.recountLocked(e)
	if at == 0 {
		return ""
	}
	return h.items[at-1].item.ID
}

// indexOf is item id's place in the conversation, -1 when it has none; under mu. The map finds
// the entry, then a scan of pointers its place: a conversation may hold ~100k small items within
// Config.ConversationBytes, and comparing every id cost 1.5 ms an event at that size.
func (h *history) indexOf(id string) int {
	e := h.byID[id]
	if e == nil {
		return -1
	}
	return slices.Index(h.items, e)
}

// delete removes item id and gives back what it kept; false when there is none.
func (h *history) delete(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := h.indexOf(id)
	if i < 0 {
		return false
	}
	h.held -= h.items[i].held
	h.items = slices.Delete(h.items, i, i+1)
	delete(h.byID, id)
	return true
}

// hold counts n more bytes toward Config.ConversationBytes: false (nothing counted) when they do not
// fit. n < 0 gives bytes back.
func (h *history) hold(n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n > 0 && h.held+n > h.limit {
		return false
	}
	h.held += n
	return true
}

// full: the conversation holds Config.ConversationBytes (a response that writes it is refused).
func (h *history) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held >= h.limit
}

// recountLocked brings e's count up to what it keeps now, under mu. Content the conversation makes
// itself (transcripts, a reply's text and calls) is never refused: it is bounded by the turn or
// the reply that makes it, and counted so that the next item.create or response.create sees it.
// An entry not in the conversation (deleted: its bytes were given back; an out-of-band reply's)
// is not counted, or the count would leak.
func (h *history) recountLocked(e *entry) {
	if h.byID[e.item.ID] != e {
		return
	}
	n := itemBytes(e.item, e.countAudio)
	h.held += n - e.held
	e.held = n
}

// recount is recountLocked, taking mu.
func (h *history) recount(e *entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recountLocked(e)
}

// edit changes e's item under mu (f must not block) and recounts it.
func (h *history) edit(e *entry, f func(it *wire.Item)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&e.item)
	h.recountLocked(e)
}

// clone is a copy of e's item as it stands, safe to hand to the writer.
func (h *history) clone(e *entry) wire.Item {
	h.mu.Lock()
	defer h.mu.Unlock()
	return cloneItem(e.item)
}

// previousOf is the id of the item before item id ("" when first or gone).
func (h *history) previousOf(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := h.indexOf(id); i > 0 {
		return h.items[i-1].item.ID
	}
	return ""
}

// itemCopy returns a copy of item id safe to hand to the writer.
func (h *history) itemCopy(id string) (wire.Item, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byID[id]
	if e == nil {
		return wire.Item{}, false
	}
	return cloneItem(e.item), true
}

// cloneItem copies an item deeply enough that later changes do not reach an event already queued.
func cloneItem(it wire.Item) wire.Item {
	it.Content = slices.Clone(it.Content)
	for i := range it.Content {
		if t := it.Content[i].Transcript; t != nil {
			s := *t
			it.Content[i].Transcript = &s
		}
	}
	if it.Content == nil && it.Type == wire.ItemMessage {
		it.Content = []wire.ContentPart{}
	}
	return it
}

// truncate cuts an assistant audio item to what the client played (audio_end_ms): the transcript
// keeps the sentences heard whole and of the sentence cut, the share of its words its heard
// audio covers.
func (h *history) truncate(t *wire.ConversationItemTruncate) *wire.Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byID[t.ItemID]
	if e == nil {
		return wire.ErrTruncateUnknownItem(t.ItemID, t.ClientEventID())
	}
	if e.item.Type != wire.ItemMessage || e.item.Role != wire.RoleAssistant ||
		t.ContentIndex < 0 || t.ContentIndex >= len(e.item.Content) || e.item.Content[t.ContentIndex].Type != wire.OutputAudio {
		return wire.ErrInvalidValue("content_index", t.ClientEventID(),
			"Invalid 'content_index': item '%s' has no audio content at index %d.", t.ItemID, t.ContentIndex)
	}
	total := 0
	for _, p := range e.spoken {
		total += p.samples
	}
	totalMs := total * 1000 / speakRate
	if t.AudioEndMs < 0 || t.AudioEndMs > totalMs {
		return wire.ErrAudioEndTooLong(totalMs, t.AudioEndMs, t.ClientEventID())
	}
	e.cut(t.ContentIndex, e.spoken, t.AudioEndMs*speakRate/1000)
	h.recountLocked(e)
	return nil
}

// snapshot is what the mind hears: the conversation, or response.create's own input (item
// references resolved against the conversation).
func (h *history) snapshot(input []wire.Item) []wire.Item {
	h.mu.Lock()
	defer h.mu.Unlock()
	if input == nil {
		out := make([]wire.Item, len(h.items))
		for i, e := range h.items {
			out[i] = cloneItem(e.item)
		}
		return out
	}
	var out []wire.Item
	for _, it := range input {
		if it.Type == wire.ItemReference {
			if e := h.byID[it.ID]; e != nil {
				out = append(out, cloneItem(e.item))
			}
			continue
		}
		out = append(out, it)
	}
	return out
}

// transcribing is the ready channels of the user audio items still waiting for their words.
func (h *history) transcribing() []chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	var pending []chan struct{}
	for _, e := range h.items {
		if e.ready != nil {
			pending = append(pending, e.ready)
		}
	}
	return pending
}

// closeOutput sets a reply's output item e to its final status (and, for its message unless
// truncated, its final part), recounts it and returns a copy with the id of the item before it
// ("" when first or not in the conversation).
func (h *history) closeOutput(e *entry, status wire.ItemStatus, part *wire.ContentPart) (wire.Item, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.item.Status = status
	if part != nil && !e.truncated {
		e.item.Content = []wire.ContentPart{*part}
	}
	h.recountLocked(e) // the reply's text and calls, now whole
	prev := ""
	if j := slices.Index(h.items, e); j > 0 {
		prev = h.items[j-1].item.ID
	}
	return cloneItem(e.item), prev
}

// spoke records that piece's sent samples of reply audio went out as part of msg (for truncation);
// a piece the player was following is now in msg.spoken.
func (h *history) spoke(msg *entry, piece string, sent int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !msg.truncated {
		msg.spoken = append(msg.spoken, spokenPiece{text: piece, samples: sent})
	}
	if h.playing.msg == msg {
		h.playing.piece, h.playing.pieceSent = "", 0 // in msg.spoken now
	}
}

// cut truncates an assistant audio item to its first keep samples (24 kHz) of spoken, which
// are its pieces as spoken: the transcript keeps the pieces heard whole and, of the piece cut,
// the share of its words its heard audio covers; the kept audio ends on the sample. Under mu.
func (e *entry) cut(contentIndex int, spoken []spokenPiece, keep int) {
	kept := keep
	var heard []spokenPiece
	var text strings.Builder
	for _, p := range spoken {
		if keep <= 0 {
			break
		}
		if keep >= p.samples {
			heard = append(heard, p)
			text.WriteString(p.text)
			keep -= p.samples
			continue
		}
		cut := cutWords(p.text, float64(keep)/float64(p.samples))
		heard = append(heard, spokenPiece{text: cut, samples: keep})
		text.WriteString(cut)
		keep = 0
	}
	e.spoken = heard
	if len(e.audio) > 0 {
		// The kept audio ends where the client stopped playing, on a sample.
		bps := e.audioFormat.BytesPerSample()
		n := kept * e.audioFormat.SampleRate() / speakRate * bps
		e.audio = e.audio[:min(n, len(e.audio))]
	}
	s := strings.TrimSpace(text.String())
	e.item.Content[contentIndex].Transcript = &s
	e.item.Status = wire.ItemIncomplete
	e.truncated = true
}

// cutWords keeps the share frac of text's characters, ending at a word boundary.
func cutWords(text string, frac float64) string {
	n := utf8.RuneCountInString(text)
	keep := int(frac * float64(n))
	if keep <= 0 {
		return ""
	}
	runes := []rune(text)
	if keep >= n {
		return text
	}
	cut := string(runes[:keep])
	if keep < n && runes[keep] != ' ' {
		if sp := strings.LastIndexByte(cut, ' '); sp >= 0 {
			cut = cut[:sp]
		} else {
			cut = ""
		}
	}
	return cut
}

// mindMessages renders the conversation (or a response's own input) for the mind; sense (nil:
// none) adds what each message's turn shows beside its words (senses.go).
func mindMessages(items []wire.Item, sense senseFunc) []mind.Message {
	var out []mind.Message
	declined := declinedApprovals(items)
	for _, it := range items {
		switch it.Type {
		case wire.ItemMCPCall, wire.ItemMCPApprovalRequest:
			out = append(out, mcpMessages(it, declined)...)
		case wire.ItemMessage:
			var text []string
			var parts []mind.Part
			var extra []mind.Part
			dropTranscript := false
			if sense != nil && it.Role == wire.RoleUser {
				extra, dropTranscript = sense(it.ID)
			}
			for _, p := range it.Content {
				switch {
				case p.Type == wire.InputImage:
					parts = append(parts, mind.ImagePart(p.ImageURL, p.Detail))
				case p.Text != "":
					text = append(text, p.Text)
					parts = append(parts, mind.TextPart(p.Text))
				case p.Transcript != nil && *p.Transcript != "" && !dropTranscript:
					text = append(text, *p.Transcript)
					parts = append(parts, mind.TextPart(*p.Transcript))
				}
			}
			parts = append(parts, extra...)
			role := mind.RoleUser
			switch it.Role {
			case wire.RoleAssistant:
				role = mind.RoleAssistant
			case wire.RoleSystem:
				role = mind.RoleSystem
			}
			out = append(out, mind.Message{Role: role, Text: strings.Join(text, " "), Parts: parts})
		case wire.ItemFunctionCall:
			call := mind.Call{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if n := len(out); n > 0 && out[n-1].Role == mind.RoleAssistant {
				out[n-1].Calls = append(out[n-1].Calls, call)
			} else {
				out = append(out, mind.Message{Role: mind.RoleAssistant, Calls: []mind.Call{call}})
			}
		case wire.ItemFunctionCallOutput:
			out = append(out, mind.Message{Role: mind.RoleTool, CallID: it.CallID, Text: it.Output})
		}
	}
	return out
}
