package speechdoor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/kokoro"
)

// OpenAIVoices are the voice names of OpenAI's speech API. voiced has none of them: each is
// spoken with the default mounted voice, so a client written for OpenAI works unchanged. A
// mounted voice's own name (af_heart, …) selects it directly.
var OpenAIVoices = []string{"alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx", "sage", "shimmer", "verse"}

// speechBodyLimit bounds the JSON body: 4 MiB of input plus room for the other fields.
const speechBodyLimit = ttsFrameLimit + 64<<10

// ErrUnsupportedFormat refuses a response_format other than wav or pcm.
var ErrUnsupportedFormat = door.NewRefusal(http.StatusBadRequest, "unsupported_response_format",
	"response_format must be wav or pcm (PCM16LE mono 24 kHz); mp3, opus, aac and flac are not served")

// ErrInvalidRequestBody refuses a body that is not the JSON object the route takes.
var ErrInvalidRequestBody = door.NewRefusal(http.StatusBadRequest, "invalid_request_body",
	`the body must be a JSON object: {"input": "…", "voice": "…", "speed": 1.0, "response_format": "wav"|"pcm"}`)

// SpeechDoor serves POST /v1/audio/speech, OpenAI-compatible: input, voice, speed,
// response_format (wav, the default here, or pcm). model and instructions are accepted and
// ignored. The body is streamed sentence by sentence as each exists: a WAV body starts with a
// streaming header whose sizes say "unknown" (0xFFFFFFFF). Errors found before the first audio
// are OpenAI's shape, {"error":{"message","type","param","code"}}, code being voiced's name; a
// failure after audio began cuts the response short.
type SpeechDoor struct {
	svc *Doors
}

// NewSpeechDoor returns the door reading its engine and gate from svc.
func NewSpeechDoor(svc *Doors) *SpeechDoor { return &SpeechDoor{svc: svc} }

type speechRequest struct {
	Model          string   `json:"model"`
	Input          *string  `json:"input"`
	Voice          string   `json:"voice"`
	Speed          *float64 `json:"speed"`
	ResponseFormat string   `json:"response_format"`
	Instructions   string   `json:"instructions"`
	StreamFormat   string   `json:"stream_format"`
}

// writeSpeechError writes err in OpenAI's shape with the refusal's status; an error that is no
// refusal is synthesis_failed.
func writeSpeechError(w http.ResponseWriter, err error, param string) {
	var r *door.Refusal
	if !errors.As(err, &r) {
		err = ErrSynthesisFailed
	}
	door.WriteOpenAIError(w, err, param)
}

func (d *SpeechDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	engine := d.svc.speech.Kokoro
	if engine == nil {
		writeSpeechError(w, speechcore.ErrNotWarm, "")
		return
	}
	var req speechRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, speechBodyLimit))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeSpeechError(w, ErrTextTooLarge, "input")
			return
		}
		writeSpeechError(w, ErrInvalidRequestBody, "")
		return
	}
	if req.Input == nil || strings.TrimSpace(*req.Input) == "" {
		writeSpeechError(w, ErrEmptyText, "input")
		return
	}
	voice, err := speechVoice(engine, req.Voice)
	if err != nil {
		writeSpeechError(w, err, "voice")
		return
	}
	var speed float32
	if req.Speed != nil {
		if _, err := kokoro.CheckSpeed(float32(*req.Speed)); err != nil || *req.Speed == 0 {
			writeSpeechError(w, ErrSpeedOutOfRange, "speed")
			return
		}
		speed = float32(*req.Speed)
	}
	format := strings.ToLower(req.ResponseFormat)
	if format == "" {
		format = "wav"
	}
	if format != "wav" && format != "pcm" {
		writeSpeechError(w, door.Refuse(ErrUnsupportedFormat, fmt.Sprintf("response_format %q is not served: use wav or pcm (PCM16LE mono 24 kHz)", clip(req.ResponseFormat))), "response_format")
		return
	}
	if req.StreamFormat != "" && req.StreamFormat != "audio" {
		writeSpeechError(w, door.NewRefusal(http.StatusBadRequest, "unsupported_stream_format", `stream_format must be "audio"; server-sent events are not served`), "stream_format")
		return
	}
	// The input is held until its audio is written; a decoded body past the node's text budget
	// is refused before a session slot is taken.
	held := int64(len(*req.Input))
	if !d.svc.text.take(held) {
		writeSpeechError(w, ErrTextBudgetFull, "input")
		return
	}
	defer d.svc.text.give(held)
	release, err := d.svc.Gate.Acquire("")
	if err != nil {
		d.svc.countRefusal(err)
		writeSpeechError(w, err, "")
		return
	}
	defer release()
	defer d.svc.opened("speech")()
	defer d.svc.holdUsage()() // the meter's close waits for this door's last seconds

	// Each body write has ttsWriteTimeout, as a socket's frames do: a client that stops reading
	// holds its speech slot and one chunk of audio that long, not for ever (net/http's server
	// sets no write deadline of its own here; this one also outlives any it would set for the
	// whole response, which a long text's audio could not meet).
	rc := http.NewResponseController(w)
	write := func(b []byte) error {
		rc.SetWriteDeadline(time.Now().Add(ttsWriteTimeout)) // unsupported only where there is no conn to bound
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("%w: %w", errBodyWrite, err)
		}
		return nil
	}
	pieceStart := time.Now()
	started := false
	err = engine.Speak(r.Context(), kokoro.Request{Text: *req.Input, Voice: voice, Speed: speed}, func(c kokoro.Chunk) error {
		d.svc.speech.ObserveSynthesis(time.Since(pieceStart))
		if !started {
			started = true
			if format == "wav" {
				w.Header().Set("Content-Type", "audio/wav")
			} else {
				w.Header().Set("Content-Type", "audio/pcm")
			}
			w.Header().Set("X-Sample-Rate", fmt.Sprint(kokoro.SampleRate))
			w.WriteHeader(http.StatusOK)
			if format == "wav" {
				if err := write(audio.WAVHeader(kokoro.SampleRate, 1, 16, audio.UnknownLength)); err != nil {
					return err
				}
			}
		}
		if err := write(audio.Int16ToBytes(c.PCM)); err != nil {
			return err
		}
		d.svc.tab(r).spoken(float64(len(c.PCM)) / kokoro.SampleRate)
		pieceStart = time.Now()
		rc.SetWriteDeadline(time.Now().Add(ttsWriteTimeout))
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return fmt.Errorf("%w: %w", errBodyWrite, err)
		}
		return nil
	})
	switch {
	case err == nil:
	case errors.Is(err, errBodyWrite):
		// The client hung up or stopped reading for ttsWriteTimeout: its doing, not a failure.
		d.svc.log.Warn("speech: the client stopped reading; response cut", "err", err)
		panic(http.ErrAbortHandler)
	case r.Context().Err() != nil: // the client is gone: nobody to answer
	case !started:
		writeSpeechError(w, synthesisError(err), "input")
	default:
		d.svc.log.Error("speech: synthesis failed mid-response", "err", err)
		panic(http.ErrAbortHandler) // the client sees a cut body, not a clean end
	}
}

// errBodyWrite marks a failed write of /v1/audio/speech's body: the client is gone or stopped
// reading.
var errBodyWrite = errors.New("write the response body")

// speechVoice maps a request's voice: "" and OpenAI's names are the default voice; a mounted
// voice is itself; anything else is refused by name, listing the mounted voices.
func speechVoice(e *kokoro.Engine, voice string) (string, error) {
	v := strings.TrimSpace(voice)
	if v == "" {
		return e.DefaultVoice(), nil
	}
	if e.HasVoice(v) {
		return v, nil
	}
	for _, name := range OpenAIVoices {
		if strings.EqualFold(v, name) {
			return e.DefaultVoice(), nil
		}
	}
	return "", checkVoice(e, v)
}

// maxEcho bounds what of a client's value a refusal quotes back: a 4 MiB voice name or type must
// not come back as a 4 MiB error frame.
const maxEcho = 64

// clip shortens a client's value for quoting in a refusal.
func clip(v string) string {
	if len(v) <= maxEcho {
		return v
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "…"
}
