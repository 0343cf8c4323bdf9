package mind

import (
	"bytes"
	"encoding/base64"

	"github.com/voiced/voiced/audio"
)

// Parts of a message (issues 23 and 27): a user message may carry text, images and audio in
// order; minds that read text only read Message.Text, which holds the text parts joined. A vision
// mind reads the image parts, an omni mind the audio parts: one interface serves all three.

// PartType is the kind of one part of a message.
type PartType string

// Part types.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartAudio PartType = "audio"
)

// Part is one piece of a message: text, an image by URL (the session hands on only data: URLs of
// the bytes) with its detail (auto, low, high; "" = the server's), or audio: the utterance's own
// samples (mono, -1..1) at Rate Hz.
type Part struct {
	Type     PartType
	Text     string    // PartText
	ImageURL string    // PartImage
	Detail   string    // PartImage
	Samples  []float32 // PartAudio
	Rate     int       // PartAudio: samples per second
}

// TextPart and ImagePart make parts.
func TextPart(text string) Part { return Part{Type: PartText, Text: text} }

// ImagePart is an image by URL with its detail.
func ImagePart(url, detail string) Part { return Part{Type: PartImage, ImageURL: url, Detail: detail} }

// AudioPart is audio: samples (mono, -1..1) at rate Hz.
func AudioPart(samples []float32, rate int) Part {
	return Part{Type: PartAudio, Samples: samples, Rate: rate}
}

// Images counts the message's image parts.
func (m Message) Images() int { return m.count(PartImage) }

// Audios counts the message's audio parts.
func (m Message) Audios() int { return m.count(PartAudio) }

// AudioSeconds is how long the message's audio parts last together.
func (m Message) AudioSeconds() float64 {
	s := 0.0
	for _, p := range m.Parts {
		if p.Type == PartAudio && p.Rate > 0 {
			s += float64(len(p.Samples)) / float64(p.Rate)
		}
	}
	return s
}

func (m Message) count(t PartType) int {
	n := 0
	for _, p := range m.Parts {
		if p.Type == t {
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
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ImageURL   *chatImageURL   `json:"image_url,omitempty"`
	InputAudio *chatInputAudio `json:"input_audio,omitempty"`
}

// chatInputAudio is a chat completion's input_audio part (openai-node's
// ChatCompletionContentPartInputAudio): base64 data in a format ("wav" or "mp3"); voiced sends WAV,
// 16-bit mono PCM at the part's rate.
type chatInputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// chatContent is a message's content: a string, or an array of parts when it has an image or audio.
func chatContent(m Message) any {
	if m.Images() == 0 && m.Audios() == 0 {
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
		case PartAudio:
			parts = append(parts, chatPart{Type: "input_audio", InputAudio: &chatInputAudio{Data: wavBase64(p.Samples, p.Rate), Format: "wav"}})
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

// hasAudio reports whether any message of req carries audio.
func hasAudio(req Request) bool {
	for _, m := range req.History {
		if m.Audios() > 0 {
			return true
		}
	}
	return false
}

// wavBase64 is samples as a base64 WAV file (16-bit mono PCM at rate).
func wavBase64(samples []float32, rate int) string {
	var b bytes.Buffer
	_ = audio.EncodeWAV(&b, audio.Float32ToInt16(samples), rate) // a bytes.Buffer does not fail
	return base64.StdEncoding.EncodeToString(b.Bytes())
}
