package rtc

import (
	"fmt"
	"strings"

	"github.com/pion/sdp/v3"
)

// Bounds on an offer, checked before any credential is looked at (ValidateOffer).
const (
	// MaxRemoteCandidates bounds the ICE candidates an offer carries, all its m-lines together.
	// A browser sends fewer than 20 (a host candidate per interface and address family, a
	// server-reflexive one, a relay per TURN server); every candidate is a target of the
	// server's connectivity checks — STUN packets to the address it names, for as long as the
	// call tries to connect — so 2,000 of them made the server send ~15,000 packets in 5 s.
	// Over it the offer is refused (ErrTooManyCandidates), not trimmed: the candidates a trim
	// would drop may be the ones that connect.
	MaxRemoteCandidates = 64
	// MaxMediaSections bounds an offer's m-lines. A realtime client offers two (audio and the
	// oai-events data channel); each m-line becomes a transceiver on the call.
	MaxMediaSections = 8
)

// parseOffer parses an SDP offer; an offer over the bounds above is refused by name.
func parseOffer(offer string) (*sdp.SessionDescription, error) {
	var d sdp.SessionDescription
	if err := d.UnmarshalString(offer); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	if n := len(d.MediaDescriptions); n > MaxMediaSections {
		return nil, fmt.Errorf("%w (%d, at most %d)", ErrTooManyMedia, n, MaxMediaSections)
	}
	candidates := 0
	for _, m := range d.MediaDescriptions {
		for _, a := range m.Attributes {
			if a.IsICECandidate() {
				candidates++
			}
		}
	}
	if candidates > MaxRemoteCandidates {
		return nil, fmt.Errorf("%w (%d, at most %d)", ErrTooManyCandidates, candidates, MaxRemoteCandidates)
	}
	return &d, nil
}

// ValidateOffer parses an SDP offer and refuses, by name, one without an audio m-line or whose
// audio offers no Opus, and one with more than MaxMediaSections m-lines or MaxRemoteCandidates
// ICE candidates.
func ValidateOffer(offer string) error {
	_, err := validOffer(offer)
	return err
}

// validOffer is ValidateOffer, returning the parsed offer.
func validOffer(offer string) (*sdp.SessionDescription, error) {
	d, err := parseOffer(offer)
	if err != nil {
		return nil, err
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
				return d, nil
			}
		}
	}
	if !audio {
		return nil, ErrNoAudio
	}
	return nil, ErrNoOpus
}
