package mind

// Parts of a message (issue 23, and the seam issue 27 extends with audio): a user message may
// carry text and images in order; minds that read text only read Message.Text, which holds the
// text parts joined.

// PartType is the kind of one part of a message.
type PartType string

// Part types. Audio parts (issue 27) are to join these.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
)

// Part is one piece of a message: text, or an image by URL (the session hands on only data: URLs
// of the bytes) with its detail (auto, low, high; "" = the server's).
type Part struct {
	Type     PartType
	Text     string // PartText
	ImageURL string // PartImage
	Detail   string // PartImage
}

// TextPart and ImagePart make parts.
func TextPart(text string) Part { return Part{Type: PartText, Text: text} }

// ImagePart is an image by URL with its detail.
func ImagePart(url, detail string) Part { return Part{Type: PartImage, ImageURL: url, Detail: detail} }

// Images counts the message's image parts.
func (m Message) Images() int {
	n := 0
	for _, p := range m.Parts {
		if p.Type == PartImage {
			n++
		}
	}
	return n
}

// Why an answer stopped, when it did not simply finish.
const (
	// StopMaxTokens: the answer reached Request.MaxOutputTokens and was cut there.
	StopMaxTokens = "max_output_tokens"
	// StopContentFilter: the server's content filter cut the answer.
	StopContentFilter = "content_filter"
)

// Usage is what one answer cost in the mind's tokens, as its server counted them (zero when the
// server does not say).
type Usage struct {
	InputTokens  int
	OutputTokens int
	CachedTokens int // of InputTokens, read from the server's prompt cache
}

// The chat-completions shapes of parts and usage.

type chatPart struct {
	Type     string        `json:"type"`
	Text     string        `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// chatContent is a message's content: a string, or an array of parts when it has an image.
func chatContent(m Message) any {
	if m.Images() == 0 {
		if m.Text == "" && len(m.Calls) > 0 {
			return nil
		}
		return m.Text
	}
	parts := make([]chatPart, 0, len(m.Parts))
	for _, p := range m.Parts {
		switch p.Type {
		case PartImage:
			parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: p.ImageURL, Detail: p.Detail}})
		default:
			parts = append(parts, chatPart{Type: "text", Text: p.Text})
		}
	}
	return parts
}

type chatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *chatUsage) usage() *Usage {
	if u == nil {
		return nil
	}
	out := &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// stopOf maps a chat completion's finish_reason.
func stopOf(finish string) string {
	switch finish {
	case "length":
		return StopMaxTokens
	case "content_filter":
		return StopContentFilter
	}
	return ""
}

// hasImages reports whether any message of req carries an image.
func hasImages(req Request) bool {
	for _, m := range req.History {
		if m.Images() > 0 {
			return true
		}
	}
	return false
}
