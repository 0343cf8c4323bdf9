package rtc

import (
	"fmt"
	"strings"

	"github.com/pion/sdp/v3"
)

// ValidateOffer parses an SDP offer and refuses, by name, one without an audio m-line or whose
// audio offers no Opus.
func ValidateOffer(offer string) error {
	var d sdp.SessionDescription
	if err := d.UnmarshalString(offer); err != nil {
		return fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	audio := false
	for _, m := range d.MediaDescriptions {
		if m.MediaName.Media != "audio" {
			continue
		}
		audio = true
		for _, a := range m.Attributes {
			if a.Key != "rtpmap" {
				continue
			}
			// "111 opus/48000/2"
			if _, enc, ok := strings.Cut(a.Value, " "); ok && strings.HasPrefix(strings.ToLower(enc), "opus/") {
				return nil
			}
		}
	}
	if !audio {
		return ErrNoAudio
	}
	return ErrNoOpus
}
