package session

// The mind's view of a long conversation (issue 23): the history sent to the mind is kept under a
// token budget (Config.MindContextTokens, the mind model's room for the conversation after its
// instructions and tools), the oldest turns dropped first, as OpenAI's session.truncation does.
// The client's conversation keeps every item: only what the mind is shown is cut.

import (
	"sync"

	"github.com/voiced/voiced/mind"
	"github.com/voiced/voiced/wire"
)

// DefaultMindContextTokens is the mind's budget for the conversation when Config.MindContextTokens
// is zero: room for the history in an 8k-context model beside its instructions, tools and answer.
const DefaultMindContextTokens = 6000

// Estimated token costs (no tokenizer of the mind's model is at hand): text at 4 bytes a token,
// each message's framing, an image as OpenAI's vision models count one at low detail and at
// high (one 512-pixel tile).
const (
	bytesPerToken    = 4
	messageTokens    = 4
	imageTokensLow   = 85
	imageTokensOther = 765
	// audioTokensPerSecond: OpenAI's audio input counts about a token per 100 ms.
	audioTokensPerSecond = 10
)

// lessSenses is the window's budget (0: DefaultMindContextTokens) less what the items' senses
// add to the mind's request beyond itemTokens' estimate: the frames and the audio the newest turn
// carries (senseFunc; an image at high detail's cost, audio by its seconds). At least 1: the
// newest turn is shown whatever it costs.
func lessSenses(budget int, items []wire.Item, sense senseFunc) int {
	if budget <= 0 {
		budget = DefaultMindContextTokens
	}
	if sense == nil {
		return budget
	}
	for _, it := range items {
		parts, _ := sense(it.ID)
		for _, p := range parts {
			switch {
			case p.Type == mind.PartImage:
				budget -= imageTokensOther
			case p.Type == mind.PartAudio && p.Rate > 0:
				budget -= (len(p.Samples)*audioTokensPerSecond + p.Rate - 1) / p.Rate
			}
		}
	}
	return max(budget, 1)
}

// mindWindow is where the mind's view of the conversation starts: the id of the first item it
// is shown, kept from one reply to the next so that the view's prefix stays the same (a server's
// prompt cache keeps working) until the budget is passed again. Its own lock: replies and the
// speculation on the input goroutine read and move it.
type mindWindow struct {
	mu   sync.Mutex
	from string // "" = from the start
}

// view returns the items the mind is shown: items from the window's start, cut at a turn (a user
// message) so that they fit budget tokens when they do not. truncation "disabled" shows all;
// "retention_ratio" cuts down to that share of the budget at once; a token_limits.post_instructions
// lower than the budget lowers it. The newest turn is always shown, whatever it costs. A nil
// window (a response with its own input) computes the cut without keeping it.
func (w *mindWindow) view(items []wire.Item, t wire.Truncation, budget int) []wire.Item {
	if t.Type == wire.TruncationDisabled || len(items) == 0 {
		return items
	}
	if budget <= 0 {
		budget = DefaultMindContextTokens
	}
	if t.PostInstructions > 0 && t.PostInstructions < budget {
		budget = t.PostInstructions
	}
	start := 0
	if w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, it := range items {
			if w.from != "" && it.ID == w.from {
				start = i
				break
			}
		}
	}
	cost := make([]int, len(items))
	total := 0
	for i := start; i < len(items); i++ {
		cost[i] = itemTokens(items[i])
		total += cost[i]
	}
	if total <= budget {
		return items[start:]
	}
	target := budget
	if t.Type == wire.TruncationRetentionRatio {
		target = max(int(float64(budget)*t.RetentionRatio), 0)
	}
	cut, last := -1, -1
	for i := start; i < len(items); i++ {
		if isTurnStart(items[i]) {
			last = i
			if cut < 0 && total <= target {
				cut = i
			}
		}
		total -= cost[i]
	}
	if cut < 0 {
		cut = last // only the newest turn fits, or none does: show the newest turn
	}
	if cut < 0 {
		return items[start:] // no user turn to cut at
	}
	if w != nil && items[cut].ID != "" {
		w.from = items[cut].ID
	}
	return items[cut:]
}

// isTurnStart: a user message starts a turn (cutting there never orphans a tool's output).
func isTurnStart(it wire.Item) bool {
	return (it.Type == wire.ItemMessage || it.Type == "") && it.Role == wire.RoleUser
}

// itemTokens estimates what an item costs the mind.
func itemTokens(it wire.Item) int {
	n := 0
	switch it.Type {
	case wire.ItemFunctionCall:
		n = len(it.Name) + len(it.Arguments) + len(it.CallID)
	case wire.ItemFunctionCallOutput:
		n = len(it.Output) + len(it.CallID)
	case wire.ItemMCPCall, wire.ItemMCPApprovalRequest, wire.ItemMCPListTools, wire.ItemMCPApprovalResponse:
		n = len(it.Name) + len(it.Arguments) + mcpItemBytes(it.MCP)
	default:
		images := 0
		for _, p := range it.Content {
			switch {
			case p.Type == wire.InputImage:
				if p.Detail == "low" {
					images += imageTokensLow
				} else {
					images += imageTokensOther
				}
			case p.Transcript != nil:
				n += len(*p.Transcript)
			default:
				n += len(p.Text)
			}
		}
		return messageTokens + (n+bytesPerToken-1)/bytesPerToken + images
	}
	return messageTokens + (n+bytesPerToken-1)/bytesPerToken
}
