package wire

// response.create's response object: the reply's own instructions, voice, format, tools and
// input, in either dialect's names.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

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
		case "parallel_tool_calls":
			p.ParallelToolCalls, err = fieldOf(raw, param, id, parseBool)
		case "prompt", "tracing", "reasoning":
			// accepted, ignored (reasoning: the mind's server has its own)
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
