package wire

import (
	"encoding/json"
	"maps"
	"slices"
)

// Fields whose presence shows a session object's dialect (docs §1.2).
var (
	gaMarkers   = []string{"type", "audio", "output_modalities"}
	betaMarkers = []string{
		"modalities", "voice", "input_audio_format", "output_audio_format", "turn_detection",
		"input_audio_transcription", "input_audio_noise_reduction", "temperature", "max_response_output_tokens",
	}
	// Accepted and ignored in either shape, reported in SessionPatch.Ignored: fields OpenAI defines
	// that voiced does not act on. Refusing them would refuse the whole update and drop the
	// client's instructions and tools (agents SDKs send tracing by default).
	ignoredSessionFields = []string{"tracing", "prompt", "client_secret", "input_audio_format_options", "reasoning"}
	// What the beta transcription_session.update accepts and ignores.
	ignoredTranscriptionFields = []string{"client_secret", "modalities"}
)

// A sessionField is one field of the session object, spelled once for every dialect: its beta
// name, its GA path (dots walk into nested objects: "audio.input.format"), whether the beta
// transcription_session.update takes it (under its beta name), and the setter that parses it
// into the patch. "" means the shape has no such field.
type sessionField struct {
	beta, ga      string
	transcription bool
	set           setter
}

// A setter parses one field's value into the patch; param names it in errors.
type setter func(p *SessionPatch, raw json.RawMessage, param, id string) *Error

// to makes the setter that parses a possibly-null value with parse into the field dst picks.
func to[T any](dst func(*SessionPatch) *Field[T], parse func(json.RawMessage, string, string) (T, *Error)) setter {
	return func(p *SessionPatch, raw json.RawMessage, param, id string) *Error {
		v, err := fieldOf(raw, param, id, parse)
		*dst(p) = v
		return err
	}
}

// sessionFields is every session field voiced applies, in both dialects.
var sessionFields = []sessionField{
	{beta: "model", ga: "model", set: to(func(p *SessionPatch) *Field[string] { return &p.Model }, parseModel)},
	{beta: "instructions", ga: "instructions", set: to(func(p *SessionPatch) *Field[string] { return &p.Instructions }, parseInstructions)},
	{beta: "tools", ga: "tools", set: to(func(p *SessionPatch) *Field[[]Tool] { return &p.Tools }, parseTools)},
	{beta: "tool_choice", ga: "tool_choice", set: to(func(p *SessionPatch) *Field[ToolChoice] { return &p.ToolChoice }, parseToolChoice)},
	{beta: "max_output_tokens", ga: "max_output_tokens", set: setMaxTokens},
	{beta: "max_response_output_tokens", set: setMaxTokens},
	{ga: "type", set: to(func(p *SessionPatch) *Field[SessionType] { return &p.Type }, parseSessionType)},
	{beta: "modalities", set: setTextOnly},
	{ga: "output_modalities", set: setTextOnly},
	{beta: "voice", ga: "audio.output.voice", set: to(func(p *SessionPatch) *Field[string] { return &p.Voice }, parseVoice)},
	{beta: "speed", ga: "audio.output.speed", set: to(func(p *SessionPatch) *Field[float64] { return &p.Speed }, parseSpeed)},
	{beta: "input_audio_format", ga: "audio.input.format", transcription: true,
		set: to(func(p *SessionPatch) *Field[AudioFormat] { return &p.InputFormat }, parseFormat)},
	{beta: "output_audio_format", ga: "audio.output.format",
		set: to(func(p *SessionPatch) *Field[AudioFormat] { return &p.OutputFormat }, parseFormat)},
	{beta: "turn_detection", ga: "audio.input.turn_detection", transcription: true,
		set: to(func(p *SessionPatch) *Field[TurnDetection] { return &p.TurnDetection }, parseTurnDetection)},
	{beta: "input_audio_transcription", ga: "audio.input.transcription", transcription: true,
		set: to(func(p *SessionPatch) *Field[Transcription] { return &p.Transcription }, parseTranscription)},
	{beta: "input_audio_noise_reduction", ga: "audio.input.noise_reduction", transcription: true,
		set: to(func(p *SessionPatch) *Field[string] { return &p.NoiseReduction }, parseNoiseReduction)},
	{beta: "voiced.echo_cancellation", ga: "voiced.echo_cancellation",
		set: to(func(p *SessionPatch) *Field[bool] { return &p.EchoCancellation }, parseBoolField)},
	{beta: "voiced.interruption", ga: "voiced.interruption",
		set: to(func(p *SessionPatch) *Field[Interruption] { return &p.Interruption }, parseInterruption)},
	{beta: "include", ga: "include", transcription: true,
		set: to(func(p *SessionPatch) *Field[[]string] { return &p.Include }, parseInclude)},
	{beta: "temperature", set: to(func(p *SessionPatch) *Field[float64] { return &p.Temperature }, parseTemperature)},
	{beta: "parallel_tool_calls", ga: "parallel_tool_calls", set: to(func(p *SessionPatch) *Field[bool] { return &p.ParallelToolCalls }, parseBool)},
	{beta: "truncation", ga: "truncation", set: to(func(p *SessionPatch) *Field[Truncation] { return &p.Truncation }, parseTruncation)},
}

var (
	setMaxTokens = to(func(p *SessionPatch) *Field[int] { return &p.MaxOutputTokens }, parseMaxTokens)
	setTextOnly  = to(func(p *SessionPatch) *Field[bool] { return &p.TextOnly }, parseModalities)
)

// A sessionShape is the table seen from one dialect: its fields by path, the nested objects
// those paths walk through, and the top-level fields it accepts and ignores.
type sessionShape struct {
	fields  map[string]setter
	objects map[string]bool
	ignored []string
}

var (
	betaShape          = shapeOf(func(f sessionField) string { return f.beta }, ignoredSessionFields)
	gaShape            = shapeOf(func(f sessionField) string { return f.ga }, ignoredSessionFields)
	transcriptionShape = shapeOf(func(f sessionField) string {
		if f.transcription {
			return f.beta
		}
		return ""
	}, ignoredTranscriptionFields)
)

func shapeOf(path func(sessionField) string, ignored []string) sessionShape {
	s := sessionShape{fields: map[string]setter{}, objects: map[string]bool{}, ignored: ignored}
	for _, f := range sessionFields {
		p := path(f)
		if p == "" {
			continue
		}
		s.fields[p] = f.set
		for i := range len(p) {
			if p[i] == '.' {
				s.objects[p[:i]] = true
			}
		}
	}
	return s
}

func decodeSessionUpdate(h ClientHeader, raw json.RawMessage, d Dialect) (*SessionUpdate, *Error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, ErrMissingParameter("session", h.EventID)
	}
	m, err := asObject(raw, "session", h.EventID)
	if err != nil {
		return nil, err
	}
	u := &SessionUpdate{ClientHeader: h, Shape: d}
	if h.Type == TypeTranscriptionSessionUpdate {
		u.Transcription, u.Shape, u.ShapeKnown = true, Beta, true
		u.Session.Type = valueField(SessionTranscription)
		u.Session.marker = "input_audio_transcription"
		if err := transcriptionShape.decode(&u.Session, m, "", h.EventID); err != nil {
			return nil, err
		}
		return u, nil
	}
	for _, k := range gaMarkers {
		if _, ok := m[k]; ok {
			u.Shape, u.ShapeKnown, u.Session.marker = GA, true, k
			break
		}
	}
	if !u.ShapeKnown {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if slices.Contains(betaMarkers, k) {
				u.Shape, u.ShapeKnown, u.Session.marker = Beta, true, k
				break
			}
		}
	}
	shape := betaShape
	if u.Shape == GA {
		shape = gaShape
	}
	if err := shape.decode(&u.Session, m, "", h.EventID); err != nil {
		return nil, err
	}
	return u, nil
}

// decode sets the patch from one object of the session: the session itself (path "") or one
// nested under it ("audio", "audio.input"), walking its keys in order. A nested object's own
// members may be null (audio.input: null changes nothing); the session's may not.
func (s sessionShape) decode(p *SessionPatch, m map[string]json.RawMessage, path, id string) *Error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key := k
		if path != "" {
			key = path + "." + k
		}
		raw, param := m[k], "session."+key
		if set, ok := s.fields[key]; ok {
			if err := set(p, raw, param, id); err != nil {
				return err
			}
			continue
		}
		if path == "" && slices.Contains(s.ignored, k) {
			p.Ignored = append(p.Ignored, param)
			continue
		}
		if !s.objects[key] {
			return ErrUnknownParameter(param, id)
		}
		if path != "" && isNull(raw) {
			continue
		}
		nested, err := asObject(raw, param, id)
		if err != nil {
			return err
		}
		if err := s.decode(p, nested, key, id); err != nil {
			return err
		}
	}
	return nil
}
