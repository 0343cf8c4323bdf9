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
)

func decodeSessionUpdate(h ClientHeader, raw json.RawMessage, d Dialect) (*SessionUpdate, *Error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, ErrMissingParameter("session", h.EventID)
	}
	m, err := asObject(raw, "session", h.EventID)
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(m))
	u := &SessionUpdate{ClientHeader: h, Shape: d}
	if h.Type == TypeTranscriptionSessionUpdate {
		u.Transcription, u.Shape, u.ShapeKnown = true, Beta, true
		u.Session.Type = valueField(SessionTranscription)
		u.Session.marker = "input_audio_transcription"
		for _, k := range keys {
			if err := decodeBetaTranscriptionKey(&u.Session, k, m[k], h.EventID); err != nil {
				return nil, err
			}
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
		for _, k := range keys {
			if slices.Contains(betaMarkers, k) {
				u.Shape, u.ShapeKnown, u.Session.marker = Beta, true, k
				break
			}
		}
	}
	for _, k := range keys {
		var err *Error
		if u.Shape == GA {
			err = decodeGAKey(&u.Session, k, m[k], h.EventID)
		} else {
			err = decodeBetaKey(&u.Session, k, m[k], h.EventID)
		}
		if err != nil {
			return nil, err
		}
	}
	return u, nil
}

// decodeCommonKey handles the fields both shapes share; ok false when k is not one.
func decodeCommonKey(p *SessionPatch, k string, raw json.RawMessage, id string) (ok bool, err *Error) {
	param := "session." + k
	switch k {
	case "model":
		p.Model, err = fieldOf(raw, param, id, parseModel)
	case "instructions":
		p.Instructions, err = fieldOf(raw, param, id, parseInstructions)
	case "tools":
		p.Tools, err = fieldOf(raw, param, id, parseTools)
		p.Ignored = append(p.Ignored, hostedTools(raw, param)...)
	case "tool_choice":
		p.ToolChoice, err = fieldOf(raw, param, id, parseToolChoice)
	case "max_output_tokens":
		p.MaxOutputTokens, err = fieldOf(raw, param, id, parseMaxTokens)
	default:
		if slices.Contains(ignoredSessionFields, k) {
			p.Ignored = append(p.Ignored, param)
			return true, nil
		}
		return false, nil
	}
	return true, err
}

func decodeBetaKey(p *SessionPatch, k string, raw json.RawMessage, id string) (err *Error) {
	if ok, err := decodeCommonKey(p, k, raw, id); ok {
		return err
	}
	param := "session." + k
	switch k {
	case "modalities":
		p.TextOnly, err = fieldOf(raw, param, id, parseModalities)
	case "voice":
		p.Voice, err = fieldOf(raw, param, id, parseVoice)
	case "speed":
		p.Speed, err = fieldOf(raw, param, id, parseSpeed)
	case "input_audio_format":
		p.InputFormat, err = fieldOf(raw, param, id, parseFormat)
	case "output_audio_format":
		p.OutputFormat, err = fieldOf(raw, param, id, parseFormat)
	case "turn_detection":
		p.TurnDetection, err = fieldOf(raw, param, id, parseTurnDetection)
	case "input_audio_transcription":
		p.Transcription, err = fieldOf(raw, param, id, parseTranscription)
	case "input_audio_noise_reduction":
		p.NoiseReduction, err = fieldOf(raw, param, id, parseNoiseReduction)
	case "temperature":
		p.Temperature, err = fieldOf(raw, param, id, parseTemperature)
	case "max_response_output_tokens":
		p.MaxOutputTokens, err = fieldOf(raw, param, id, parseMaxTokens)
	default:
		return ErrUnknownParameter(param, id)
	}
	return err
}

func decodeBetaTranscriptionKey(p *SessionPatch, k string, raw json.RawMessage, id string) (err *Error) {
	param := "session." + k
	switch k {
	case "input_audio_format":
		p.InputFormat, err = fieldOf(raw, param, id, parseFormat)
	case "turn_detection":
		p.TurnDetection, err = fieldOf(raw, param, id, parseTurnDetection)
	case "input_audio_transcription":
		p.Transcription, err = fieldOf(raw, param, id, parseTranscription)
	case "input_audio_noise_reduction":
		p.NoiseReduction, err = fieldOf(raw, param, id, parseNoiseReduction)
	case "include", "client_secret", "modalities":
		p.Ignored = append(p.Ignored, param)
	default:
		return ErrUnknownParameter(param, id)
	}
	return err
}

func decodeGAKey(p *SessionPatch, k string, raw json.RawMessage, id string) (err *Error) {
	if ok, err := decodeCommonKey(p, k, raw, id); ok {
		return err
	}
	param := "session." + k
	switch k {
	case "type":
		p.Type, err = fieldOf(raw, param, id, parseSessionType)
	case "output_modalities":
		p.TextOnly, err = fieldOf(raw, param, id, parseModalities)
	case "audio":
		return decodeGAAudio(p, raw, id)
	default:
		return ErrUnknownParameter(param, id)
	}
	return err
}

func decodeGAAudio(p *SessionPatch, raw json.RawMessage, id string) *Error {
	audio, err := asObject(raw, "session.audio", id)
	if err != nil {
		return err
	}
	for _, dir := range slices.Sorted(maps.Keys(audio)) {
		prefix := "session.audio." + dir
		if dir != "input" && dir != "output" {
			return ErrUnknownParameter(prefix, id)
		}
		if isNull(audio[dir]) {
			continue
		}
		fields, err := asObject(audio[dir], prefix, id)
		if err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			raw, param := fields[k], prefix+"."+k
			switch dir + "." + k {
			case "input.format":
				p.InputFormat, err = fieldOf(raw, param, id, parseFormat)
			case "input.transcription":
				p.Transcription, err = fieldOf(raw, param, id, parseTranscription)
			case "input.noise_reduction":
				p.NoiseReduction, err = fieldOf(raw, param, id, parseNoiseReduction)
			case "input.turn_detection":
				p.TurnDetection, err = fieldOf(raw, param, id, parseTurnDetection)
			case "output.format":
				p.OutputFormat, err = fieldOf(raw, param, id, parseFormat)
			case "output.voice":
				p.Voice, err = fieldOf(raw, param, id, parseVoice)
			case "output.speed":
				p.Speed, err = fieldOf(raw, param, id, parseSpeed)
			default:
				err = ErrUnknownParameter(param, id)
			}
			if err != nil {
				return err
			}
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
