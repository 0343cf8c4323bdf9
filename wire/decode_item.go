package wire

// Conversation items and their content parts (conversation.item.create's item,
// response.create's input entries).

import (
	"encoding/json"
	"fmt"
)

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
	// mcp_approval_response
	ApprovalRequestID *string `json:"approval_request_id"`
	Approve           *bool   `json:"approve"`
	Reason            *string `json:"reason"`
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
	if err := oneOf(param+".type", id, typ, "message", "function_call", "function_call_output", "item_reference", string(ItemMCPApprovalResponse)); err != nil {
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
	case ItemMCPApprovalResponse:
		if deref(in.ApprovalRequestID) == "" {
			return Item{}, ErrMissingParameter(param+".approval_request_id", id)
		}
		if in.Approve == nil {
			return Item{}, ErrMissingParameter(param+".approve", id)
		}
		if err := boundString(deref(in.ApprovalRequestID), param+".approval_request_id", id, MaxIDBytes); err != nil {
			return Item{}, err
		}
		if err := boundString(deref(in.Reason), param+".reason", id, MaxInstructionsBytes); err != nil {
			return Item{}, err
		}
		it.MCP = &MCPItem{ApprovalRequestID: *in.ApprovalRequestID, Approve: *in.Approve, Reason: deref(in.Reason)}
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
	if part.Type == InputImage {
		if err := checkImagePart(part, param, id); err != nil {
			return ContentPart{}, err
		}
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
