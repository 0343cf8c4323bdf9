package wire

import "slices"

// Session is one connection's effective configuration, dialect-neutral:
// what session.created/updated report and what turn, mind and the reply
// run with. The session package owns it (one goroutine); Apply merges each
// decoded session.update into it.
type Session struct {
	ID        string      // NewID("sess_")
	Model     string      // echoed: the ?model= of the handshake
	Type      SessionType // realtime (default) or transcription
	ExpiresAt int64       // unix seconds; 0 when unknown

	Instructions    string
	TextOnly        bool   // modalities ["text"]: no audio out
	Voice           string // an OpenAI voice name as sent (alloy, verse, marin…); mapping to a Kokoro voice is the session's
	Speed           float64
	InputFormat     AudioFormat
	OutputFormat    AudioFormat
	TurnDetection   TurnDetection  // Type TurnNone: the client commits
	Transcription   *Transcription // nil: no input transcription events
	NoiseReduction  string         // "", near_field or far_field (accepted, echoed)
	Tools           []Tool
	ToolChoice      ToolChoice
	Temperature     float64 // beta only; echoed, passed to the mind
	MaxOutputTokens int     // 0 = "inf"
	// ParallelToolCalls: the mind may make several function calls in one answer (default true).
	ParallelToolCalls bool
	Truncation        Truncation // zero: auto
	// voiced's own (room.go): nil is the default (the transport's; cancel at every speech_started).
	EchoCancellation *bool
	Interruption     *Interruption
	// Include is include[]: IncludeLogprobs fills the input transcription events' logprobs.
	Include []string
}

// Defaults of a new session (docs §7).
const (
	DefaultVoice       = "alloy"
	DefaultTemperature = 0.8
)

// NewSession returns a realtime session with OpenAI's defaults: audio and
// text out, pcm16 both ways, server_vad (0.5, 300 ms, 500 ms), voice alloy,
// speed 1, tool_choice auto, temperature 0.8, max tokens inf.
func NewSession(id, model string) Session {
	return Session{
		ID: id, Model: model, Type: SessionRealtime,
		Voice: DefaultVoice, Speed: 1, Temperature: DefaultTemperature, ParallelToolCalls: true,
		TurnDetection: DefaultTurnDetection(TurnServerVAD),
		ToolChoice:    ToolChoice{Mode: ToolChoiceAuto},
	}
}

// Apply merges a decoded session.update: present fields change, absent
// ones stay, null turns off turn detection / transcription / noise
// reduction and clears instructions and tools. It either applies all of the
// update or, returning a *Error, none of it. The model is not switchable
// (ignored); a session's type cannot change.
func (s *Session) Apply(u *SessionUpdate) error {
	p := &u.Session
	if p.Type.Set() && p.Type.Value != s.Type {
		param := "session.type"
		return ErrInvalidValue(param, u.EventID, "Invalid value: '%s'. A session's type cannot change from '%s'.", p.Type.Value, s.Type)
	}
	next := *s
	if p.Instructions.Present {
		next.Instructions = p.Instructions.Value // null clears too
	}
	if p.TextOnly.Set() {
		next.TextOnly = p.TextOnly.Value
	}
	if p.Voice.Set() {
		next.Voice = p.Voice.Value
	}
	if p.Speed.Set() {
		next.Speed = p.Speed.Value
	}
	if p.InputFormat.Set() {
		next.InputFormat = p.InputFormat.Value
	}
	if p.OutputFormat.Set() {
		next.OutputFormat = p.OutputFormat.Value
	}
	if p.TurnDetection.Present {
		next.TurnDetection = p.TurnDetection.Value // null: zero value, TurnNone
	}
	if p.Transcription.Cleared() {
		next.Transcription = nil
	} else if p.Transcription.Set() {
		next.Transcription = new(p.Transcription.Value)
	}
	if p.NoiseReduction.Present {
		next.NoiseReduction = p.NoiseReduction.Value
	}
	if p.Include.Present {
		next.Include = slices.Clone(p.Include.Value)
	}
	if p.Tools.Present {
		next.Tools = slices.Clone(p.Tools.Value)
	}
	if p.ToolChoice.Set() {
		next.ToolChoice = p.ToolChoice.Value
	}
	if p.Temperature.Set() {
		next.Temperature = p.Temperature.Value
	}
	if p.MaxOutputTokens.Present {
		next.MaxOutputTokens = p.MaxOutputTokens.Value
	}
	if p.ParallelToolCalls.Set() {
		next.ParallelToolCalls = p.ParallelToolCalls.Value
	}
	if p.Truncation.Present {
		next.Truncation = p.Truncation.Value // null: auto
	}
	if p.EchoCancellation.Present {
		next.EchoCancellation = nil
		if !p.EchoCancellation.Null {
			next.EchoCancellation = new(p.EchoCancellation.Value)
		}
	}
	if p.Interruption.Present {
		next.Interruption = nil
		if !p.Interruption.Null {
			next.Interruption = new(p.Interruption.Value)
		}
	}
	next.fitType() // transcription_session.go
	if next.ToolChoice.Mode == ToolChoiceFunction && !slices.ContainsFunc(next.Tools, func(t Tool) bool { return t.Name == next.ToolChoice.Name }) {
		return ErrInvalidValue("session.tool_choice", u.EventID, "Invalid value: tool_choice names function '%s', which is not in tools.", clip(next.ToolChoice.Name))
	}
	*s = next
	return nil
}

// ForResponse returns the configuration one response runs with: the
// session overlaid with response.create's parameters.
func (s Session) ForResponse(p ResponseParams) Session {
	r := s
	if p.Instructions.Present {
		r.Instructions = p.Instructions.Value
	}
	if p.TextOnly.Set() {
		r.TextOnly = p.TextOnly.Value
	}
	if p.Voice.Set() {
		r.Voice = p.Voice.Value
	}
	if p.OutputFormat.Set() {
		r.OutputFormat = p.OutputFormat.Value
	}
	if p.Tools.Present {
		r.Tools = p.Tools.Value
	}
	if p.ToolChoice.Set() {
		r.ToolChoice = p.ToolChoice.Value
	}
	if p.Temperature.Set() {
		r.Temperature = p.Temperature.Value
	}
	if p.MaxOutputTokens.Present {
		r.MaxOutputTokens = p.MaxOutputTokens.Value
	}
	if p.ParallelToolCalls.Set() {
		r.ParallelToolCalls = p.ParallelToolCalls.Value
	}
	return r
}

func maxTokensWire(n int) any {
	if n <= 0 {
		return "inf"
	}
	return n
}

func modalitiesWire(textOnly bool, d Dialect) []string {
	switch {
	case textOnly:
		return []string{"text"}
	case d == Beta:
		return []string{"text", "audio"}
	default:
		return []string{"audio"}
	}
}

type noiseJSON struct {
	Type string `json:"type"`
}

func noiseWire(s string) *noiseJSON {
	if s == "" {
		return nil
	}
	return &noiseJSON{Type: s}
}

func toolsWire(t []Tool) []Tool {
	if t == nil {
		return []Tool{}
	}
	return t
}

type betaSessionJSON struct {
	ID                       string             `json:"id"`
	Object                   string             `json:"object"`
	Model                    string             `json:"model"`
	ExpiresAt                int64              `json:"expires_at"`
	Modalities               []string           `json:"modalities"`
	Instructions             string             `json:"instructions"`
	Voice                    string             `json:"voice"`
	InputAudioFormat         string             `json:"input_audio_format"`
	OutputAudioFormat        string             `json:"output_audio_format"`
	InputAudioTranscription  *Transcription     `json:"input_audio_transcription"`
	InputAudioNoiseReduction *noiseJSON         `json:"input_audio_noise_reduction"`
	TurnDetection            *turnDetectionJSON `json:"turn_detection"`
	Tools                    []Tool             `json:"tools"`
	ToolChoice               any                `json:"tool_choice"`
	Temperature              float64            `json:"temperature"`
	MaxResponseOutputTokens  any                `json:"max_response_output_tokens"`
	Speed                    float64            `json:"speed"`
	Tracing                  any                `json:"tracing"`
	Include                  any                `json:"include"`
	Voiced                   *voicedJSON        `json:"voiced,omitempty"`
}

type betaTranscriptionSessionJSON struct {
	ID                       string             `json:"id"`
	Object                   string             `json:"object"`
	ExpiresAt                int64              `json:"expires_at"`
	InputAudioFormat         string             `json:"input_audio_format"`
	InputAudioTranscription  *Transcription     `json:"input_audio_transcription"`
	InputAudioNoiseReduction *noiseJSON         `json:"input_audio_noise_reduction"`
	TurnDetection            *turnDetectionJSON `json:"turn_detection"`
	Include                  any                `json:"include"`
}

type gaAudioInputJSON struct {
	Format         any                `json:"format"`
	Transcription  *Transcription     `json:"transcription"`
	NoiseReduction *noiseJSON         `json:"noise_reduction"`
	TurnDetection  *turnDetectionJSON `json:"turn_detection"`
}

type gaAudioOutputJSON struct {
	Format any     `json:"format"`
	Voice  string  `json:"voice"`
	Speed  float64 `json:"speed"`
}

type gaAudioJSON struct {
	Input  gaAudioInputJSON   `json:"input"`
	Output *gaAudioOutputJSON `json:"output,omitempty"`
}

type gaSessionJSON struct {
	Type             SessionType `json:"type"`
	Object           string      `json:"object"`
	ID               string      `json:"id"`
	Model            string      `json:"model"`
	OutputModalities []string    `json:"output_modalities"`
	Instructions     string      `json:"instructions"`
	Tools            []Tool      `json:"tools"`
	ToolChoice       any         `json:"tool_choice"`
	MaxOutputTokens  any         `json:"max_output_tokens"`
	Tracing          any         `json:"tracing"`
	Truncation       any         `json:"truncation"`
	Prompt           any         `json:"prompt"`
	ExpiresAt        int64       `json:"expires_at"`
	Audio            gaAudioJSON `json:"audio"`
	Include          any         `json:"include"`
	Voiced           *voicedJSON `json:"voiced,omitempty"`
}

type gaTranscriptionSessionJSON struct {
	Type      SessionType `json:"type"`
	Object    string      `json:"object"`
	ID        string      `json:"id"`
	ExpiresAt int64       `json:"expires_at"`
	Audio     gaAudioJSON `json:"audio"`
	Include   any         `json:"include"`
}

// wire renders the session object of session.created/updated (and the
// ephemeral-key answers) in dialect d.
func (s *Session) wire(d Dialect) any {
	if d == Beta {
		if s.Type == SessionTranscription {
			return betaTranscriptionSessionJSON{
				ID: s.ID, Object: "realtime.transcription_session", ExpiresAt: s.ExpiresAt,
				InputAudioFormat: s.InputFormat.String(), InputAudioTranscription: s.Transcription,
				InputAudioNoiseReduction: noiseWire(s.NoiseReduction), TurnDetection: s.TurnDetection.wire(),
				Include: includeWire(s.Include),
			}
		}
		return betaSessionJSON{
			ID: s.ID, Object: "realtime.session", Model: s.Model, ExpiresAt: s.ExpiresAt,
			Modalities: modalitiesWire(s.TextOnly, Beta), Instructions: s.Instructions, Voice: s.Voice,
			InputAudioFormat: s.InputFormat.String(), OutputAudioFormat: s.OutputFormat.String(),
			InputAudioTranscription: s.Transcription, InputAudioNoiseReduction: noiseWire(s.NoiseReduction),
			TurnDetection: s.TurnDetection.wire(), Tools: toolsWire(s.Tools), ToolChoice: s.ToolChoice.wire(Beta),
			Temperature: s.Temperature, MaxResponseOutputTokens: maxTokensWire(s.MaxOutputTokens), Speed: s.Speed,
			Include: includeWire(s.Include), Voiced: s.voicedWire(),
		}
	}
	in := gaAudioInputJSON{
		Format: s.InputFormat.wire(GA), Transcription: s.Transcription,
		NoiseReduction: noiseWire(s.NoiseReduction), TurnDetection: s.TurnDetection.wire(),
	}
	if s.Type == SessionTranscription {
		return gaTranscriptionSessionJSON{Type: SessionTranscription, Object: "realtime.transcription_session", ID: s.ID,
			ExpiresAt: s.ExpiresAt, Audio: gaAudioJSON{Input: in}, Include: includeWire(s.Include)}
	}
	return gaSessionJSON{
		Type: SessionRealtime, Object: "realtime.session", ID: s.ID, Model: s.Model,
		OutputModalities: modalitiesWire(s.TextOnly, GA), Instructions: s.Instructions,
		Tools: toolsWire(s.Tools), ToolChoice: s.ToolChoice.wire(GA), MaxOutputTokens: maxTokensWire(s.MaxOutputTokens),
		Truncation: s.Truncation.wire(), ExpiresAt: s.ExpiresAt,
		Audio:   gaAudioJSON{Input: in, Output: &gaAudioOutputJSON{Format: s.OutputFormat.wire(GA), Voice: s.Voice, Speed: s.Speed}},
		Include: includeWire(s.Include), Voiced: s.voicedWire(),
	}
}

// SessionJSON renders s as the session object of dialect d, for the HTTP
// ephemeral-key answers (POST /v1/realtime/sessions, /client_secrets).
func SessionJSON(s *Session, d Dialect) any { return s.wire(d) }
