package wire

// The field parsers of the session, response and item decoders (decode_session.go): each reads
// one client-supplied value, checks its type, range and bounds, and names what is wrong.

import (
	"encoding/json"
	"errors"
	"fmt"
)

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
		if in.Type != nil && *in.Type == "mcp" {
			t, err := parseMCPTool(r, p, id)
			if err != nil {
				return nil, err
			}
			for _, prev := range tools {
				if prev.MCP != nil && prev.MCP.Label == t.MCP.Label {
					return nil, ErrInvalidValue(p+".server_label", id, "Invalid '%s.server_label': '%s' names two MCP servers.", p, clip(t.MCP.Label))
				}
			}
			if len(MCPServers(tools)) == MaxMCPServerLabels {
				return nil, ErrArrayTooLong(param+" (type mcp)", id, MaxMCPServerLabels, MaxMCPServerLabels+1)
			}
			tools = append(tools, t)
			continue
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
