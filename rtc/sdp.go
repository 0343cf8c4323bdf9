package rtc

import (
	"fmt"
	"strconv"
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
		return nil, fmt.Errorf("%w: %w", ErrBadOffer, err)
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

// unsetPeerMessage is the largest message pion sends a peer whose offer names no
// a=max-message-size, or 0 (pion's sctpMaxMessageSizeUnsetValue: what peers from before the
// attribute took; RFC 8841 says 64 KiB, and 0 "any size", but pion's association enforces this).
const unsetPeerMessage = 65535

// peerMaxMessage is the largest data-channel message the peer takes: its offer's
// a=max-message-size on the first application m-line, read as pion reads it (the first value
// that parses as a uint32; absent or 0: unsetPeerMessage). pion's association refuses to send a
// larger message (a Send fails), so the call must never hand it one (Transport.Send). Chrome
// offers 262144, Firefox 1073741823.
func peerMaxMessage(d *sdp.SessionDescription) int {
	for _, m := range d.MediaDescriptions {
		if m.MediaName.Media != "application" {
			continue
		}
		for _, a := range m.Attributes {
			if strings.TrimSpace(a.Key) != "max-message-size" {
				continue
			}
			if v, err := strconv.ParseUint(a.Value, 10, 32); err == nil {
				if v == 0 {
					return unsetPeerMessage
				}
				return int(v)
			}
		}
		break
	}
	return unsetPeerMessage
}
