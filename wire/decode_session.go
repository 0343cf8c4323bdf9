package wire

import (
	"encoding/json"
	"fmt"
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
	ignoredSessionFields = []string{"tracing", "truncation", "prompt", "include", "client_secret", "input_audio_format_options", "reasoning"}
	// What the beta transcription_session.update accepts and ignores.
	ignoredTranscriptionFields = []string{"include", "client_secret", "modalities"}
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
	{beta: "tools", ga: "tools", set: setTools},
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
	{beta: "temperature", set: to(func(p *SessionPatch) *Field[float64] { return &p.Temperature }, parseTemperature)},
}

var (
	setMaxTokens = to(func(p *SessionPatch) *Field[int] { return &p.MaxOutputTokens }, parseMaxTokens)
	setTextOnly  = to(func(p *SessionPatch) *Field[bool] { return &p.TextOnly }, parseModalities)
)

// setTools sets the tools and reports the hosted (MCP) entries among them as ignored.
func setTools(p *SessionPatch, raw json.RawMessage, param, id string) *Error {
	err := to(func(p *SessionPatch) *Field[[]Tool] { return &p.Tools }, parseTools)(p, raw, param, id)
	p.Ignored = append(p.Ignored, hostedTools(raw, param)...)
	return err
}

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

func decodeResponseParams(raw json.RawMessage, d Dialect, id string) (ResponseParams, *Error) {
	p := ResponseParams{Conversation: "auto"}
	if len(raw) == 0 || isNull(raw) {
		return p, nil
	}
	m, err := asObject(raw, "response", id)
	if err != nil {
		return p, err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		raw, param := m[k], "response."+k
		switch k {
		case "conversation":
			if isNull(raw) {
				continue
			}
			s, err := parseString(raw, param, id)
			if err == nil {
				err = oneOf(param, id, s, "auto", "none")
			}
			if err != nil {
				return p, err
			}
			p.Conversation = s
		case "metadata":
			if isNull(raw) {
				continue
			}
			if p.Metadata, err = parseMetadata(raw, param, id); err != nil {
				return p, err
			}
		case "input":
			p.Input, err = fieldOf(raw, param, id, func(raw json.RawMessage, param, id string) ([]Item, *Error) {
				var list []json.RawMessage
				if err := json.Unmarshal(raw, &list); err != nil {
					return nil, invalidType(param, "an array", raw, id)
				}
				items := make([]Item, 0, len(list))
				for i, r := range list {
					it, err := decodeItem(r, fmt.Sprintf("%s[%d]", param, i), d, id)
					if err != nil {
						return nil, err
					}
					items = append(items, it)
				}
				return items, nil
			})
		case "instructions":
			p.Instructions, err = fieldOf(raw, param, id, parseInstructions)
		case "modalities", "output_modalities":
			p.TextOnly, err = fieldOf(raw, param, id, parseModalities)
		case "voice":
			p.Voice, err = fieldOf(raw, param, id, parseVoice)
		case "output_audio_format":
			p.OutputFormat, err = fieldOf(raw, param, id, parseFormat)
		case "audio":
			err = decodeResponseAudio(&p, raw, id)
		case "tools":
			p.Tools, err = fieldOf(raw, param, id, parseTools)
		case "tool_choice":
			p.ToolChoice, err = fieldOf(raw, param, id, parseToolChoice)
		case "temperature":
			p.Temperature, err = fieldOf(raw, param, id, parseTemperature)
		case "max_output_tokens", "max_response_output_tokens":
			p.MaxOutputTokens, err = fieldOf(raw, param, id, parseMaxTokens)
		case "prompt", "tracing":
			// accepted, ignored
		default:
			err = ErrUnknownParameter(param, id)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func decodeResponseAudio(p *ResponseParams, raw json.RawMessage, id string) *Error {
	var audio struct {
		Output map[string]json.RawMessage `json:"output"`
	}
	if err := unmarshalObject(raw, "response.audio", id, &audio); err != nil {
		return err
	}
	var err *Error
	for _, k := range slices.Sorted(maps.Keys(audio.Output)) {
		raw, param := audio.Output[k], "response.audio.output."+k
		switch k {
		case "format":
			p.OutputFormat, err = fieldOf(raw, param, id, parseFormat)
		case "voice":
			p.Voice, err = fieldOf(raw, param, id, parseVoice)
		default:
			err = ErrUnknownParameter(param, id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type itemIn struct {
	ID        *string           `json:"id"`
	Type      *string           `json:"type"`
	Object    *string           `json:"object"`
	Status    *string           `json:"status"`
	Role      *string           `json:"role"`
	Content   []json.RawMessage `json:"content"`
	CallID    *string           `json:"call_id"`
	Name      *string           `json:"name"`
	Arguments *string           `json:"arguments"`
	Output    *string           `json:"output"`
}

type contentIn struct {
	Type       *string `json:"type"`
	Text       *string `json:"text"`
	Audio      *string `json:"audio"`
	Transcript *string `json:"transcript"`
	ImageURL   *string `json:"image_url"`
	Detail     *string `json:"detail"`
}

// decodeItem reads a conversation item (conversation.item.create's item,
// response.create's input entries). param names it in errors ("item").
func decodeItem(raw json.RawMessage, param string, d Dialect, id string) (Item, *Error) {
	var in itemIn
	if err := unmarshalObject(raw, param, id, &in); err != nil {
		return Item{}, err
	}
	it := Item{ID: deref(in.ID), CallID: deref(in.CallID), Name: deref(in.Name), Arguments: deref(in.Arguments), Output: deref(in.Output)}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"id", it.ID, MaxIDBytes}, {"call_id", it.CallID, MaxIDBytes}, {"name", it.Name, MaxNameBytes}} {
		if err := boundString(f.v, param+"."+f.name, id, f.max); err != nil {
			return Item{}, err
		}
	}
	typ := deref(in.Type)
	if typ == "" && in.Role != nil {
		typ = string(ItemMessage)
	}
	if typ == "" {
		return Item{}, ErrMissingParameter(param+".type", id)
	}
	if err := oneOf(param+".type", id, typ, "message", "function_call", "function_call_output", "item_reference"); err != nil {
		return Item{}, err
	}
	it.Type = ItemType(typ)
	if in.Status != nil {
		if err := oneOf(param+".status", id, *in.Status, "completed", "incomplete", "in_progress"); err != nil {
			return Item{}, err
		}
		it.Status = ItemStatus(*in.Status)
	}
	switch it.Type {
	case ItemReference:
		if it.ID == "" {
			return Item{}, ErrMissingParameter(param+".id", id)
		}
	case ItemFunctionCall:
		if it.Name == "" {
			return Item{}, ErrMissingParameter(param+".name", id)
		}
	case ItemFunctionCallOutput:
		if it.CallID == "" {
			return Item{}, ErrMissingParameter(param+".call_id", id)
		}
		if in.Output == nil {
			return Item{}, ErrMissingParameter(param+".output", id)
		}
	case ItemMessage:
		if in.Role == nil {
			return Item{}, ErrMissingParameter(param+".role", id)
		}
		if err := oneOf(param+".role", id, *in.Role, "user", "assistant", "system"); err != nil {
			return Item{}, err
		}
		it.Role = Role(*in.Role)
		it.Content = make([]ContentPart, 0, len(in.Content))
		for i, raw := range in.Content {
			part, err := decodeContent(raw, fmt.Sprintf("%s.content[%d]", param, i), it.Role, d, id)
			if err != nil {
				return Item{}, err
			}
			it.Content = append(it.Content, part)
		}
	}
	return it, nil
}

func decodeContent(raw json.RawMessage, param string, role Role, d Dialect, id string) (ContentPart, *Error) {
	var in contentIn
	if err := unmarshalObject(raw, param, id, &in); err != nil {
		return ContentPart{}, err
	}
	if in.Type == nil {
		return ContentPart{}, ErrMissingParameter(param+".type", id)
	}
	typ, tparam := *in.Type, param+".type"
	var part ContentPart
	switch role {
	case RoleAssistant:
		switch typ {
		case "text", "output_text":
			part.Type = OutputText
		case "audio", "output_audio":
			part.Type = OutputAudio
		default:
			want := "output_text"
			if d == Beta {
				want = "text"
			}
			return ContentPart{}, ErrInvalidValue(tparam, id, "Invalid value: '%s'. Value must be '%s'.", clip(typ), want)
		}
	case RoleSystem:
		if typ != string(InputText) {
			return ContentPart{}, ErrInvalidValue(tparam, id, "Invalid value: '%s'. Value must be 'input_text'.", clip(typ))
		}
		part.Type = InputText
	default:
		allowed := []string{"input_text", "input_audio"}
		if d == GA {
			allowed = append(allowed, "input_image")
		}
		if err := oneOf(tparam, id, typ, allowed...); err != nil {
			return ContentPart{}, err
		}
		part.Type = ContentType(typ)
	}
	part.Text = deref(in.Text)
	part.Transcript = in.Transcript
	part.ImageURL, part.Detail = deref(in.ImageURL), deref(in.Detail)
	if part.Type == InputImage && part.ImageURL == "" {
		return ContentPart{}, ErrMissingParameter(param+".image_url", id)
	}
	if in.Audio != nil && (part.Type == InputAudio || part.Type == OutputAudio) {
		audio, err := decodeBase64(*in.Audio)
		if err != nil {
			return ContentPart{}, ErrInvalidValue(param+".audio", id, "Invalid '%s.audio': the audio must be base64-encoded (%v).", param, err)
		}
		part.Audio = audio
	}
	return part, nil
}
