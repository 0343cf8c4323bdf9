package wire

// The model parameters of the GA surface that reach the mind (issue 23): parallel_tool_calls,
// truncation, and the checks on an input_image's URL. Kept here, out of the shared decoders, so
// the session table and response.create only name them.

import (
	"encoding/json"
	"strings"
)

// Truncation types (session.truncation).
const (
	TruncationAuto           = "auto"
	TruncationDisabled       = "disabled"
	TruncationRetentionRatio = "retention_ratio"
)

// Truncation is how the history sent to the mind is kept under its budget: "auto" (the zero
// value) drops the oldest turns until it fits; "disabled" sends all of it; "retention_ratio"
// drops down to RetentionRatio of the budget at once, so the next turns reuse the same prefix.
// PostInstructions, when > 0, lowers the budget (token_limits.post_instructions).
type Truncation struct {
	Type             string
	RetentionRatio   float64
	PostInstructions int
}

type truncationLimitsJSON struct {
	PostInstructions int `json:"post_instructions,omitempty"`
}

type truncationJSON struct {
	Type           string                `json:"type"`
	RetentionRatio float64               `json:"retention_ratio"`
	TokenLimits    *truncationLimitsJSON `json:"token_limits,omitempty"`
}

// wire renders "auto" / "disabled" as strings, retention_ratio as its object.
func (t Truncation) wire() any {
	switch t.Type {
	case TruncationDisabled:
		return TruncationDisabled
	case TruncationRetentionRatio:
		j := truncationJSON{Type: t.Type, RetentionRatio: t.RetentionRatio}
		if t.PostInstructions > 0 {
			j.TokenLimits = &truncationLimitsJSON{PostInstructions: t.PostInstructions}
		}
		return j
	default:
		return TruncationAuto
	}
}

// MaxPostInstructionsTokens bounds truncation.token_limits.post_instructions (no model voiced
// talks to reads more than a million tokens).
const MaxPostInstructionsTokens = 1 << 20

func parseTruncation(raw json.RawMessage, param, id string) (Truncation, *Error) {
	if rawKind(raw) == "a string" {
		s, _ := parseString(raw, param, id)
		if err := oneOf(param, id, s, TruncationAuto, TruncationDisabled); err != nil {
			return Truncation{}, err
		}
		if s == TruncationAuto {
			return Truncation{}, nil
		}
		return Truncation{Type: s}, nil
	}
	var in struct {
		Type           *string  `json:"type"`
		RetentionRatio *float64 `json:"retention_ratio"`
		TokenLimits    *struct {
			PostInstructions *int `json:"post_instructions"`
		} `json:"token_limits"`
	}
	if err := unmarshalObject(raw, param, id, &in); err != nil {
		return Truncation{}, invalidType(param, "'auto', 'disabled' or an object", raw, id)
	}
	if in.Type == nil {
		return Truncation{}, ErrMissingParameter(param+".type", id)
	}
	if err := oneOf(param+".type", id, *in.Type, TruncationRetentionRatio); err != nil {
		return Truncation{}, err
	}
	if in.RetentionRatio == nil {
		return Truncation{}, ErrMissingParameter(param+".retention_ratio", id)
	}
	if err := inRange(param+".retention_ratio", id, *in.RetentionRatio, 0, 1); err != nil {
		return Truncation{}, err
	}
	t := Truncation{Type: TruncationRetentionRatio, RetentionRatio: *in.RetentionRatio}
	if in.TokenLimits != nil && in.TokenLimits.PostInstructions != nil {
		n, p := *in.TokenLimits.PostInstructions, param+".token_limits.post_instructions"
		if n < 1 || n > MaxPostInstructionsTokens {
			return Truncation{}, ErrInvalidValue(p, id, "Invalid '%s': expected an integer between 1 and %d, but got %d instead.", p, MaxPostInstructionsTokens, n)
		}
		t.PostInstructions = n
	}
	return t, nil
}

func parseBool(raw json.RawMessage, param, id string) (bool, *Error) {
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return false, invalidType(param, "a boolean", raw, id)
	}
	return b, nil
}

// checkImagePart validates an input_image: a base64 data URI of a PNG or JPEG, as OpenAI's
// realtime API takes it (never a URL: the mind's server would fetch what a client names, inside the
// operator's network), and its detail.
func checkImagePart(p ContentPart, param, id string) *Error {
	head, data, ok := strings.Cut(strings.TrimPrefix(p.ImageURL, "data:"), ",")
	mime, _ := strings.CutSuffix(head, ";base64")
	if !strings.HasPrefix(p.ImageURL, "data:") || !ok || !strings.HasSuffix(head, ";base64") ||
		(mime != "image/png" && mime != "image/jpeg" && mime != "image/jpg") || data == "" {
		return ErrInvalidValue(param+".image_url", id,
			"Invalid '%s.image_url': expected a base64 data URI of a PNG or JPEG image (data:image/png;base64,…), but got '%s'.", param, clip(p.ImageURL))
	}
	if p.Detail != "" {
		return oneOf(param+".detail", id, p.Detail, "auto", "low", "high")
	}
	return nil
}
