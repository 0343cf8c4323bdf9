package rtc

import "errors"

// Errors, by name.
var (
	// ErrBadOffer: the SDP offer does not parse.
	ErrBadOffer = errors.New("rtc: SDP offer does not parse")
	// ErrNoAudio: the offer has no audio m-line.
	ErrNoAudio = errors.New("rtc: SDP offer has no audio m-line")
	// ErrNoOpus: the offer's audio m-line offers no Opus (opus/48000/2).
	ErrNoOpus = errors.New("rtc: SDP offer's audio offers no Opus")
	// ErrTooManyCandidates: the offer carries more than MaxRemoteCandidates ICE candidates.
	ErrTooManyCandidates = errors.New("rtc: SDP offer carries too many ICE candidates")
	// ErrTooManyMedia: the offer has more than MaxMediaSections m-lines.
	ErrTooManyMedia = errors.New("rtc: SDP offer has too many m-lines")
	// ErrContentType: the signalling body is neither application/sdp nor multipart/form-data.
	ErrContentType = errors.New("rtc: Content-Type must be application/sdp or multipart/form-data")
	// ErrNoSDPPart: a multipart body without an "sdp" part.
	ErrNoSDPPart = errors.New("rtc: multipart body has no sdp part")
	// ErrBadSession: the "session" part is not a JSON object.
	ErrBadSession = errors.New("rtc: session part is not a JSON object")
	// ErrBodyTooLarge: the signalling body exceeds MaxSignalBody.
	ErrBodyTooLarge = errors.New("rtc: signalling body too large")
	// ErrBadMultipart: the multipart body is malformed.
	ErrBadMultipart = errors.New("rtc: malformed multipart body")
)

// Call errors, by name.
var (
	// ErrICETimeout: ICE did not connect within Config.ConnectTimeout.
	ErrICETimeout = errors.New("rtc: ICE did not connect in time")
	// ErrICEFailed: ICE failed or the peer connection closed (the peer went away).
	ErrICEFailed = errors.New("rtc: ICE failed or peer connection closed")
	// ErrCallClosed: the call was closed by its owner.
	ErrCallClosed = errors.New("rtc: call closed")
	// ErrEventQueueFull: Send found the data channel's queue full (the peer does not read).
	ErrEventQueueFull = errors.New("rtc: event queue full")
	// ErrGathering: ICE gathering did not complete before the context ended.
	ErrGathering = errors.New("rtc: ICE gathering did not complete")
	// ErrConfig: the Config is invalid.
	ErrConfig = errors.New("rtc: invalid config")
)
