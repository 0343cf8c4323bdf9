package wire

import (
	"encoding/json"
	"errors"
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

// fieldOf decodes a possibly-null field with parse.
func fieldOf[T any](raw json.RawMessage, param, id string, parse func(json.RawMessage, string, string) (T, *Error)) (Field[T], *Error) {
	if isNull(raw) {
		return Field[T]{Present: true, Null: true}, nil
	}
	v, err := parse(raw, param, id)
	if err != nil {
		return Field[T]{}, err
	}
	return valueField(v), nil
}

func asObject(raw json.RawMessage, param, id string) (map[string]json.RawMessage, *Error) {
	var m map[string]json.RawMessage
	if rawKind(raw) != "an object" || json.Unmarshal(raw, &m) != nil {
		return nil, invalidType(param, "an object", raw, id)
	}
	return m, nil
}

// unmarshalObject decodes a JSON object into v, naming a wrongly typed
// member by its path.
func unmarshalObject(raw json.RawMessage, param, id string, v any) *Error {
	if rawKind(raw) != "an object" {
		return invalidType(param, "an object", raw, id)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			p := param + "." + typeErr.Field
			return invalidRequest(CodeInvalidType, p, id, "Invalid type for '%s': expected %s, but got %s instead.",
				p, describeGo(typeErr.Type.String()), describeJSON(typeErr.Value))
		}
		return invalidType(param, "an object", raw, id)
	}
	return nil
}

func parseString(raw json.RawMessage, param, id string) (string, *Error) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", invalidType(param, "a string", raw, id)
	}
	return s, nil
}

func parseNumber(raw json.RawMessage, param, id string) (float64, *Error) {
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0, invalidType(param, "a number", raw, id)
	}
	return f, nil
}

func inRange(param, id string, v, lo, hi float64) *Error {
	if v < lo {
		return ErrInvalidValue(param, id, "Invalid '%s': decimal below minimum value. Expected a value >= %g, but got %g instead.", param, lo, v)
	}
	if v > hi {
		return ErrInvalidValue(param, id, "Invalid '%s': decimal above maximum value. Expected a value <= %g, but got %g instead.", param, hi, v)
	}
	return nil
}

func parseSpeed(raw json.RawMessage, param, id string) (float64, *Error) {
	f, err := parseNumber(raw, param, id)
	if err == nil {
		err = inRange(param, id, f, 0.25, 1.5)
	}
	return f, err
}

func parseTemperature(raw json.RawMessage, param, id string) (float64, *Error) {
	f, err := parseNumber(raw, param, id)
	if err == nil {
		err = inRange(param, id, f, 0.6, 1.2)
	}
	return f, err
}

func parseSessionType(raw json.RawMessage, param, id string) (SessionType, *Error) {
	s, err := parseString(raw, param, id)
	if err == nil {
		err = oneOf(param, id, s, "realtime", "transcription")
	}
	return SessionType(s), err
}

// parseModalities gives TextOnly: true when "audio" is not asked for.
func parseModalities(raw json.RawMessage, param, id string) (bool, *Error) {
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return false, invalidType(param, "an array of strings", raw, id)
	}
	if len(list) == 0 {
		return false, ErrInvalidValue(param, id, "Invalid '%s': empty array. Expected an array with minimum length 1, but got an empty array instead.", param)
	}
	audio := false
	for i, m := range list {
		if err := oneOf(fmt.Sprintf("%s[%d]", param, i), id, m, "text", "audio"); err != nil {
			return false, err
		}
		audio = audio || m == "audio"
	}
	return !audio, nil
}

func parseVoice(raw json.RawMessage, param, id string) (string, *Error) {
	if rawKind(raw) == "an object" {
		var v struct {
			ID string `json:"id"`
		}
		if err := unmarshalObject(raw, param, id, &v); err != nil {
			return "", err
		}
		if v.ID == "" {
			return "", ErrMissingParameter(param+".id", id)
		}
		return v.ID, boundString(v.ID, param+".id", id, MaxNameBytes)
	}
	s, err := parseString(raw, param, id)
	if err == nil && s == "" {
		err = ErrInvalidValue(param, id, "Invalid value: ''. The voice must not be empty.")
	}
	if err == nil {
		err = boundString(s, param, id, MaxNameBytes)
	}
	return s, err
}

// parseModel reads a model name, within MaxModelBytes.
func parseModel(raw json.RawMessage, param, id string) (string, *Error) {
	s, err := parseString(raw, param, id)
	if err == nil {
		err = boundString(s, param, id, MaxModelBytes)
	}
	return s, err
}

// parseInstructions reads instructions, within MaxInstructionsBytes.
func parseInstructions(raw json.RawMessage, param, id string) (string, *Error) {
	s, err := parseString(raw, param, id)
	if err == nil {
		err = boundString(s, param, id, MaxInstructionsBytes)
	}
	return s, err
}

// parseFormat accepts the beta strings and the GA objects in either shape.
func parseFormat(raw json.RawMessage, param, id string) (AudioFormat, *Error) {
	if rawKind(raw) == "an object" {
		var f struct {
			Type string `json:"type"`
			Rate *int   `json:"rate"`
		}
		if err := unmarshalObject(raw, param, id, &f); err != nil {
			return 0, err
		}
		switch f.Type {
		case "audio/pcm":
			if f.Rate != nil && *f.Rate != 24000 {
				return 0, ErrInvalidValue(param+".rate", id, "Invalid value: %d. Supported values are: 24000.", *f.Rate)
			}
			return PCM16, nil
		case "audio/pcmu":
			return G711Ulaw, nil
		case "audio/pcma":
			return G711Alaw, nil
		case "":
			return 0, ErrMissingParameter(param+".type", id)
		}
		return 0, oneOf(param+".type", id, f.Type, "audio/pcm", "audio/pcmu", "audio/pcma")
	}
	s, err := parseString(raw, param, id)
	if err != nil {
		return 0, invalidType(param, "a string or an object", raw, id)
	}
	switch s {
	case "pcm16":
		return PCM16, nil
	case "g711_ulaw":
		return G711Ulaw, nil
	case "g711_alaw":
		return G711Alaw, nil
	}
	return 0, oneOf(param, id, s, "pcm16", "g711_ulaw", "g711_alaw")
}

func parseTranscription(raw json.RawMessage, param, id string) (Transcription, *Error) {
	var t Transcription
	if err := unmarshalObject(raw, param, id, &t); err != nil {
		return t, err
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"model", t.Model, MaxNameBytes}, {"language", t.Language, MaxNameBytes}, {"prompt", t.Prompt, MaxTranscriptionPromptBytes}} {
		if err := boundString(f.v, param+"."+f.name, id, f.max); err != nil {
			return t, err
		}
	}
	return t, nil
}

func parseNoiseReduction(raw json.RawMessage, param, id string) (string, *Error) {
	var n struct {
		Type string `json:"type"`
	}
	if err := unmarshalObject(raw, param, id, &n); err != nil {
		return "", err
	}
	return n.Type, oneOf(param+".type", id, n.Type, "near_field", "far_field")
}

func parseTurnDetection(raw json.RawMessage, param, id string) (TurnDetection, *Error) {
	var in struct {
		Type              *string  `json:"type"`
		Threshold         *float64 `json:"threshold"`
		PrefixPaddingMs   *int     `json:"prefix_padding_ms"`
		SilenceDurationMs *int     `json:"silence_duration_ms"`
		IdleTimeoutMs     *int     `json:"idle_timeout_ms"`
		Eagerness         *string  `json:"eagerness"`
		CreateResponse    *bool    `json:"create_response"`
		InterruptResponse *bool    `json:"interrupt_response"`
	}
	if err := unmarshalObject(raw, param, id, &in); err != nil {
		return TurnDetection{}, err
	}
	typ := "server_vad"
	if in.Type != nil {
		typ = *in.Type
	}
	var td TurnDetection
	switch typ {
	case "server_vad":
		td = DefaultTurnDetection(TurnServerVAD)
	case "semantic_vad":
		td = DefaultTurnDetection(TurnSemanticVAD)
	case "none": // what beta servers echo for "off"
		return TurnDetection{}, nil
	default:
		return TurnDetection{}, oneOf(param+".type", id, typ, "server_vad", "semantic_vad")
	}
	if in.Threshold != nil {
		if err := inRange(param+".threshold", id, *in.Threshold, 0, 1); err != nil {
			return td, err
		}
		td.Threshold = *in.Threshold
	}
	for _, f := range []struct {
		name string
		v    *int
		dst  *int
	}{{"prefix_padding_ms", in.PrefixPaddingMs, &td.PrefixPaddingMs}, {"silence_duration_ms", in.SilenceDurationMs, &td.SilenceDurationMs}, {"idle_timeout_ms", in.IdleTimeoutMs, &td.IdleTimeoutMs}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			return td, ErrInvalidValue(param+"."+f.name, id, "Invalid '%s.%s': integer below minimum value. Expected a value >= 0, but got %d instead.", param, f.name, *f.v)
		}
		*f.dst = *f.v
	}
	if in.Eagerness != nil {
		if err := oneOf(param+".eagerness", id, *in.Eagerness, EagernessLow, EagernessMedium, EagernessHigh, EagernessAuto); err != nil {
			return td, err
		}
		td.Eagerness = *in.Eagerness
	}
	if in.CreateResponse != nil {
		td.CreateResponse = *in.CreateResponse
	}
	if in.InterruptResponse != nil {
		td.InterruptResponse = *in.InterruptResponse
	}
	return td, nil
}

// hostedToolTypes are tool entries OpenAI runs on its side (remote MCP servers): voiced accepts
// them in tools and does not apply them.
var hostedToolTypes = []string{"mcp"}

// hostedTools names the entries of a tools array that are hosted tools ("session.tools[1] (mcp)").
func hostedTools(raw json.RawMessage, param string) []string {
	var list []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []string
	for i, t := range list {
		if slices.Contains(hostedToolTypes, t.Type) {
			out = append(out, fmt.Sprintf("%s[%d] (%s)", param, i, t.Type))
		}
	}
	return out
}

func parseTools(raw json.RawMessage, param, id string) ([]Tool, *Error) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, invalidType(param, "an array", raw, id)
	}
	if len(list) > MaxTools {
		return nil, ErrArrayTooLong(param, id, MaxTools, len(list))
	}
	tools := make([]Tool, 0, len(list))
	for i, r := range list {
		p := fmt.Sprintf("%s[%d]", param, i)
		var in struct {
			Type        *string         `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := unmarshalObject(r, p, id, &in); err != nil {
			return nil, err
		}
		if in.Type != nil && slices.Contains(hostedToolTypes, *in.Type) {
			continue // accepted, not applied: hostedTools reports it
		}
		if in.Type != nil {
			if err := oneOf(p+".type", id, *in.Type, "function"); err != nil {
				return nil, err
			}
		}
		if in.Name == "" {
			return nil, ErrMissingParameter(p+".name", id)
		}
		if err := boundString(in.Name, p+".name", id, MaxNameBytes); err != nil {
			return nil, err
		}
		if isNull(in.Parameters) {
			in.Parameters = nil
		}
		tools = append(tools, Tool{Type: "function", Name: in.Name, Description: in.Description, Parameters: in.Parameters})
	}
	if n := toolsBytes(tools); n > MaxToolsBytes {
		return nil, invalidRequest(CodeStringTooLong, param, id,
			"Invalid '%s': the tools' definitions are too long together. Expected at most %d bytes (names, descriptions and parameters), but got %d instead.", param, MaxToolsBytes, n)
	}
	return tools, nil
}

func parseToolChoice(raw json.RawMessage, param, id string) (ToolChoice, *Error) {
	if rawKind(raw) == "a string" {
		s, _ := parseString(raw, param, id)
		switch s {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			return ToolChoice{Mode: s}, nil
		case "":
			return ToolChoice{}, ErrInvalidValue(param, id, "Invalid value: ''. Supported values are: 'auto', 'none', 'required', or a function.")
		}
		return ToolChoice{Mode: ToolChoiceFunction, Name: s}, boundString(s, param, id, MaxNameBytes) // beta: a function's name
	}
	var in struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := unmarshalObject(raw, param, id, &in); err != nil {
		return ToolChoice{}, invalidType(param, "a string or an object", raw, id)
	}
	if err := oneOf(param+".type", id, in.Type, "function"); err != nil {
		return ToolChoice{}, err
	}
	name := in.Name
	if name == "" && in.Function != nil {
		name = in.Function.Name
	}
	if name == "" {
		return ToolChoice{}, ErrMissingParameter(param+".name", id)
	}
	return ToolChoice{Mode: ToolChoiceFunction, Name: name}, boundString(name, param+".name", id, MaxNameBytes)
}

// parseMaxTokens: "inf" is 0; otherwise 1..4096.
func parseMaxTokens(raw json.RawMessage, param, id string) (int, *Error) {
	if rawKind(raw) == "a string" {
		s, _ := parseString(raw, param, id)
		if s == "inf" {
			return 0, nil
		}
		return 0, ErrInvalidValue(param, id, "Invalid value: '%s'. Supported values are: 'inf' or an integer between 1 and 4096.", clip(s))
	}
	var n int
	if json.Unmarshal(raw, &n) != nil {
		return 0, invalidType(param, "an integer or 'inf'", raw, id)
	}
	if n < 1 || n > 4096 {
		return 0, ErrInvalidValue(param, id, "Invalid '%s': expected an integer between 1 and 4096 or 'inf', but got %d instead.", param, n)
	}
	return n, nil
}
