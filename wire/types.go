package wire

import (
	"crypto/rand"
	"encoding/json"
)

// Field is a value a client event may set, leave unchanged, or clear with
// null. Absent: Present false. "x": null: Present and Null. Otherwise Value.
// This is what tells `turn_detection: null` (turn detection off) from an
// absent turn_detection (unchanged), and `instructions: ""` from absence.
type Field[T any] struct {
	Present bool
	Null    bool
	Value   T
}

// Set reports whether the field carries a value (present and not null).
func (f Field[T]) Set() bool { return f.Present && !f.Null }

// Cleared reports whether the field was sent as null.
func (f Field[T]) Cleared() bool { return f.Present && f.Null }

func valueField[T any](v T) Field[T] { return Field[T]{Present: true, Value: v} }

// AudioFormat is an input or output audio encoding, one enum for the beta
// strings and the GA objects.
type AudioFormat uint8

const (
	// PCM16 is 16-bit little-endian mono PCM at 24 kHz: beta "pcm16",
	// GA {"type":"audio/pcm","rate":24000}. The zero value and the default.
	PCM16 AudioFormat = iota
	// G711Ulaw is 8 kHz μ-law: beta "g711_ulaw", GA {"type":"audio/pcmu"}.
	G711Ulaw
	// G711Alaw is 8 kHz A-law: beta "g711_alaw", GA {"type":"audio/pcma"}.
	G711Alaw
)

// String is the beta name.
func (f AudioFormat) String() string {
	switch f {
	case G711Ulaw:
		return "g711_ulaw"
	case G711Alaw:
		return "g711_alaw"
	default:
		return "pcm16"
	}
}

// SampleRate is the format's rate in Hz.
func (f AudioFormat) SampleRate() int {
	if f == PCM16 {
		return 24000
	}
	return 8000
}

// BytesPerSample is 2 for PCM16, 1 for G.711.
func (f AudioFormat) BytesPerSample() int {
	if f == PCM16 {
		return 2
	}
	return 1
}

// Duration of n bytes of this format, in milliseconds.
func (f AudioFormat) Millis(n int) float64 {
	return float64(n) * 1000 / float64(f.BytesPerSample()*f.SampleRate())
}

type gaFormat struct {
	Type string `json:"type"`
	Rate int    `json:"rate,omitempty"`
}

func (f AudioFormat) wire(d Dialect) any {
	if d == Beta {
		return f.String()
	}
	switch f {
	case G711Ulaw:
		return gaFormat{Type: "audio/pcmu"}
	case G711Alaw:
		return gaFormat{Type: "audio/pcma"}
	default:
		return gaFormat{Type: "audio/pcm", Rate: 24000}
	}
}

// TurnType is how the end of the user's turn is found.
type TurnType uint8

const (
	// TurnNone: turn_detection null, the client commits and asks for responses.
	TurnNone TurnType = iota
	// TurnServerVAD: silence after speech ends the turn (Hush).
	TurnServerVAD
	// TurnSemanticVAD: the partial transcript helps decide (eagerness).
	TurnSemanticVAD
)

func (t TurnType) String() string {
	switch t {
	case TurnServerVAD:
		return "server_vad"
	case TurnSemanticVAD:
		return "semantic_vad"
	default:
		return "none"
	}
}

// Eagerness values of semantic_vad.
const (
	EagernessLow    = "low"
	EagernessMedium = "medium"
	EagernessHigh   = "high"
	EagernessAuto   = "auto" // = medium
)

// TurnDetection is the effective turn detection config; a decoded
// turn_detection object arrives here with OpenAI's defaults filled in.
type TurnDetection struct {
	Type              TurnType
	Threshold         float64 // server_vad, 0..1, default 0.5
	PrefixPaddingMs   int     // server_vad, default 300
	SilenceDurationMs int     // server_vad, default 500
	IdleTimeoutMs     int     // server_vad (GA), 0 = none (sent as null)
	Eagerness         string  // semantic_vad: low|medium|high|auto, default auto
	CreateResponse    bool    // default true
	InterruptResponse bool    // default true
}

// DefaultTurnDetection returns the defaults OpenAI fills for a type.
func DefaultTurnDetection(t TurnType) TurnDetection {
	td := TurnDetection{Type: t}
	switch t {
	case TurnServerVAD:
		td.Threshold, td.PrefixPaddingMs, td.SilenceDurationMs = 0.5, 300, 500
		td.CreateResponse, td.InterruptResponse = true, true
	case TurnSemanticVAD:
		td.Eagerness = EagernessAuto
		td.CreateResponse, td.InterruptResponse = true, true
	}
	return td
}

type turnDetectionJSON struct {
	Type              string   `json:"type"`
	Threshold         *float64 `json:"threshold,omitempty"`
	PrefixPaddingMs   *int     `json:"prefix_padding_ms,omitempty"`
	SilenceDurationMs *int     `json:"silence_duration_ms,omitempty"`
	IdleTimeoutMs     any      `json:"idle_timeout_ms,omitempty"` // server_vad only: a number or null
	Eagerness         string   `json:"eagerness,omitempty"`
	CreateResponse    bool     `json:"create_response"`
	InterruptResponse bool     `json:"interrupt_response"`
}

// wire renders the config; nil (JSON null) when off. interrupt_response is
// always explicit: agents-js reads it to decide whether to cancel itself.
func (t TurnDetection) wire() *turnDetectionJSON {
	if t.Type == TurnNone {
		return nil
	}
	j := &turnDetectionJSON{Type: t.Type.String(), CreateResponse: t.CreateResponse, InterruptResponse: t.InterruptResponse}
	if t.Type == TurnServerVAD {
		j.Threshold, j.PrefixPaddingMs, j.SilenceDurationMs = &t.Threshold, &t.PrefixPaddingMs, &t.SilenceDurationMs
		j.IdleTimeoutMs = json.RawMessage("null")
		if t.IdleTimeoutMs > 0 {
			j.IdleTimeoutMs = t.IdleTimeoutMs
		}
	} else {
		j.Eagerness = t.Eagerness
	}
	return j
}

// Transcription configures input transcription (input_audio_transcription /
// audio.input.transcription). The model name is echoed, not interpreted.
type Transcription struct {
	Model    string `json:"model"`
	Language string `json:"language,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
}

// Tool is a function the model may call, or (MCP set, Type "mcp") a remote MCP server whose tools
// it may call (mcp.go).
type Tool struct {
	Type        string          // "function" or "mcp"
	Name        string          // function
	Description string          // function
	Parameters  json.RawMessage // function: JSON Schema, as sent
	MCP         *MCPServer      // mcp
}

// Tool choice modes.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
	ToolChoiceFunction = "function" // Name says which
)

// ToolChoice is "auto" | "none" | "required" or one named function. Decoded
// from a string, GA {type:"function",name}, or beta {type:"function",function:{name}}.
type ToolChoice struct {
	Mode string // one of the ToolChoice* constants; "" means auto
	Name string // the function, when Mode is ToolChoiceFunction
}

type toolChoiceFunc struct {
	Name string `json:"name"`
}

type toolChoiceJSON struct {
	Type     string          `json:"type"`
	Name     string          `json:"name"`
	Function *toolChoiceFunc `json:"function,omitempty"`
}

// wire renders a mode as its string; a function as GA {type,name} and, for
// beta, with function{name} too, so both beta parsers (v0.6.1 reads
// function.name) and GA ones find it.
func (c ToolChoice) wire(d Dialect) any {
	switch c.Mode {
	case ToolChoiceFunction:
		j := toolChoiceJSON{Type: "function", Name: c.Name}
		if d == Beta {
			j.Function = &toolChoiceFunc{Name: c.Name}
		}
		return j
	case "":
		return ToolChoiceAuto
	default:
		return c.Mode
	}
}

// MarshalJSON renders the GA shape.
func (c ToolChoice) MarshalJSON() ([]byte, error) { return json.Marshal(c.wire(GA)) }

// ItemType is the kind of a conversation item.
type ItemType string

const (
	ItemMessage            ItemType = "message"
	ItemFunctionCall       ItemType = "function_call"
	ItemFunctionCallOutput ItemType = "function_call_output"
	// ItemReference appears only in response.create input: {type:"item_reference", id}.
	ItemReference ItemType = "item_reference"
)

// Role of a message item.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
)

// ItemStatus of an item.
type ItemStatus string

const (
	ItemInProgress ItemStatus = "in_progress"
	ItemCompleted  ItemStatus = "completed"
	ItemIncomplete ItemStatus = "incomplete"
)

// ContentType of a message content part. Values are the GA names; the
// encoder writes "text"/"audio" for OutputText/OutputAudio to beta clients,
// and the decoder maps beta "text"/"audio" to them.
type ContentType string

const (
	InputText   ContentType = "input_text"
	InputAudio  ContentType = "input_audio"
	InputImage  ContentType = "input_image"
	OutputText  ContentType = "output_text"
	OutputAudio ContentType = "output_audio"
)

// ContentPart is one part of a message item.
type ContentPart struct {
	Type ContentType
	Text string // input_text, output_text
	// Audio is decoded audio in the session's input format (input_audio) or
	// output format (output_audio). It is written only in
	// conversation.item.retrieved, never in other events.
	Audio []byte
	// Transcript of an audio part. On input_audio nil is sent as null (not
	// yet transcribed); on output_audio nil is sent as "".
	Transcript *string
	ImageURL   string // input_image (GA): a data URI
	Detail     string // input_image: auto|low|high
}

// Item is a conversation item, dialect-neutral. The encoder adds
// object:"realtime.item" and writes content:[] / arguments:"" / output:""
// even when empty.
type Item struct {
	ID      string
	Type    ItemType
	Status  ItemStatus // "" is not sent
	Role    Role       // message
	Content []ContentPart

	CallID    string   // function_call, function_call_output
	Name      string   // function_call
	Arguments string   // function_call: JSON text
	Output    string   // function_call_output
	MCP       *MCPItem // the MCP item types (mcp.go): mcp_call also uses Name and Arguments
}

type contentJSON struct {
	Type       string  `json:"type"`
	Text       *string `json:"text,omitempty"`
	Audio      *string `json:"audio,omitempty"`
	Transcript *string `json:"transcript,omitempty"`
	ImageURL   string  `json:"image_url,omitempty"`
	Detail     string  `json:"detail,omitempty"`
}

// nullTranscript is marshalled as an explicit null (omitempty does not omit a RawMessage "null").
type contentJSONNullTranscript struct {
	Type       string          `json:"type"`
	Audio      *string         `json:"audio,omitempty"`
	Transcript json.RawMessage `json:"transcript"`
}

func contentTypeName(t ContentType, d Dialect) string {
	if d == Beta {
		switch t {
		case OutputText:
			return "text"
		case OutputAudio:
			return "audio"
		}
	}
	return string(t)
}

// wire renders a part of an item. withAudio adds the base64 audio bytes.
func (p ContentPart) wire(d Dialect, withAudio bool) any {
	var audio *string
	if withAudio && len(p.Audio) > 0 {
		audio = new(b64(p.Audio))
	}
	switch p.Type {
	case InputAudio:
		if p.Transcript == nil {
			return contentJSONNullTranscript{Type: string(p.Type), Audio: audio, Transcript: json.RawMessage("null")}
		}
		return contentJSON{Type: string(p.Type), Audio: audio, Transcript: p.Transcript}
	case OutputAudio:
		return contentJSON{Type: contentTypeName(p.Type, d), Audio: audio, Transcript: new(deref(p.Transcript))}
	case InputImage:
		return contentJSON{Type: string(p.Type), ImageURL: p.ImageURL, Detail: p.Detail}
	default:
		return contentJSON{Type: contentTypeName(p.Type, d), Text: new(p.Text)}
	}
}

// partWire renders a part as response.content_part.added/done carry it:
// type "audio" or "text" in both dialects.
func (p ContentPart) partWire() contentJSON {
	if p.Type == OutputAudio || p.Type == InputAudio {
		return contentJSON{Type: "audio", Transcript: new(deref(p.Transcript))}
	}
	return contentJSON{Type: "text", Text: new(p.Text)}
}

type messageJSON struct {
	ID      string     `json:"id,omitempty"`
	Object  string     `json:"object"`
	Type    ItemType   `json:"type"`
	Status  ItemStatus `json:"status,omitempty"`
	Role    Role       `json:"role"`
	Content []any      `json:"content"`
}

type functionCallJSON struct {
	ID        string     `json:"id,omitempty"`
	Object    string     `json:"object"`
	Type      ItemType   `json:"type"`
	Status    ItemStatus `json:"status,omitempty"`
	CallID    string     `json:"call_id"`
	Name      string     `json:"name"`
	Arguments string     `json:"arguments"`
}

type functionOutputJSON struct {
	ID     string     `json:"id,omitempty"`
	Object string     `json:"object"`
	Type   ItemType   `json:"type"`
	Status ItemStatus `json:"status,omitempty"`
	CallID string     `json:"call_id"`
	Output string     `json:"output"`
}

func (it Item) wire(d Dialect, withAudio bool) any {
	if w, ok := it.mcpWire(); ok {
		return w
	}
	switch it.Type {
	case ItemFunctionCall:
		return functionCallJSON{it.ID, "realtime.item", it.Type, it.Status, it.CallID, it.Name, it.Arguments}
	case ItemFunctionCallOutput:
		return functionOutputJSON{it.ID, "realtime.item", it.Type, it.Status, it.CallID, it.Output}
	default:
		content := make([]any, len(it.Content))
		for i, p := range it.Content {
			content[i] = p.wire(d, withAudio)
		}
		typ := it.Type
		if typ == "" {
			typ = ItemMessage
		}
		return messageJSON{it.ID, "realtime.item", typ, it.Status, it.Role, content}
	}
}

// Response statuses.
const (
	ResponseInProgress = "in_progress"
	ResponseCompleted  = "completed"
	ResponseCancelled  = "cancelled"
	ResponseIncomplete = "incomplete"
	ResponseFailed     = "failed"
)

// Status detail reasons.
const (
	ReasonTurnDetected    = "turn_detected"    // cancelled by barge-in
	ReasonClientCancelled = "client_cancelled" // cancelled by response.cancel
	ReasonMaxOutputTokens = "max_output_tokens"
	ReasonContentFilter   = "content_filter"
)

// StatusDetails explains a final status: {type:"cancelled",reason:"turn_detected"},
// {type:"failed",error:{...}}.
type StatusDetails struct {
	Type   string `json:"type"`
	Reason string `json:"reason,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// Usage of one response. Token counts are ours to estimate (zero is
// honest); HeardSeconds and SpokenSeconds are voiced's extension, written
// as usage.heard_seconds / usage.spoken_seconds, extra fields that every
// client parser tolerates.
type Usage struct {
	InputTextTokens   int
	InputAudioTokens  int
	OutputTextTokens  int
	OutputAudioTokens int
	CachedTextTokens  int     // of InputTextTokens, from the mind's prompt cache
	HeardSeconds      float64 // user audio past the squelch for this turn
	SpokenSeconds     float64 // reply audio sent
}

type cachedDetailsJSON struct {
	TextTokens  int `json:"text_tokens"`
	AudioTokens int `json:"audio_tokens"`
	ImageTokens int `json:"image_tokens"`
}

type inputDetailsJSON struct {
	TextTokens          int               `json:"text_tokens"`
	AudioTokens         int               `json:"audio_tokens"`
	ImageTokens         int               `json:"image_tokens"`
	CachedTokens        int               `json:"cached_tokens"`
	CachedTokensDetails cachedDetailsJSON `json:"cached_tokens_details"`
}

type outputDetailsJSON struct {
	TextTokens  int `json:"text_tokens"`
	AudioTokens int `json:"audio_tokens"`
}

type usageJSON struct {
	TotalTokens        int               `json:"total_tokens"`
	InputTokens        int               `json:"input_tokens"`
	OutputTokens       int               `json:"output_tokens"`
	InputTokenDetails  inputDetailsJSON  `json:"input_token_details"`
	OutputTokenDetails outputDetailsJSON `json:"output_token_details"`
	HeardSeconds       float64           `json:"heard_seconds"`
	SpokenSeconds      float64           `json:"spoken_seconds"`
}

func (u *Usage) wire() *usageJSON {
	if u == nil {
		return nil
	}
	in := u.InputTextTokens + u.InputAudioTokens
	out := u.OutputTextTokens + u.OutputAudioTokens
	return &usageJSON{
		TotalTokens: in + out, InputTokens: in, OutputTokens: out,
		InputTokenDetails: inputDetailsJSON{TextTokens: u.InputTextTokens, AudioTokens: u.InputAudioTokens,
			CachedTokens: u.CachedTextTokens, CachedTokensDetails: cachedDetailsJSON{TextTokens: u.CachedTextTokens}},
		OutputTokenDetails: outputDetailsJSON{TextTokens: u.OutputTextTokens, AudioTokens: u.OutputAudioTokens},
		HeardSeconds:       u.HeardSeconds, SpokenSeconds: u.SpokenSeconds,
	}
}

// RateLimit is one entry of rate_limits.updated.
type RateLimit struct {
	Name         string  `json:"name"`            // "requests" | "tokens"
	Limit        int     `json:"limit,omitempty"` // 0: not known, omitted
	Remaining    int     `json:"remaining"`
	ResetSeconds float64 `json:"reset_seconds"`
}

// idAlphabet is go-openai-realtime's GenerateID alphabet (no 0/O/I/l).
const idAlphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// NewID returns prefix + 21 random characters, the shape of OpenAI's ids:
// NewID("item_"), NewID("resp_"), NewID("sess_"), NewID("conv_"), NewID("call_").
func NewID(prefix string) string {
	const n = 21
	var raw [n]byte
	buf := make([]byte, len(prefix)+n)
	copy(buf, prefix)
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	for i, b := range raw {
		// 256 % 57 != 0 leaves a slight bias; ids need uniqueness, not uniformity.
		buf[len(prefix)+i] = idAlphabet[int(b)%len(idAlphabet)]
	}
	return string(buf)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
