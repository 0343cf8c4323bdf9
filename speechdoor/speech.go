package speechdoor

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/voiced/voiced/audio/codec"
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

// ErrUnsupportedFormat refuses a response_format voiced does not serve.
var ErrUnsupportedFormat = door.NewRefusal(http.StatusBadRequest, "unsupported_response_format",
	"response_format must be mp3, opus, aac, flac, wav or pcm (PCM16LE mono 24 kHz)")

// ErrInvalidRequestBody refuses a body that is not the JSON object the route takes.
var ErrInvalidRequestBody = door.NewRefusal(http.StatusBadRequest, "invalid_request_body",
	`the body must be a JSON object: {"input": "…", "voice": "…", "speed": 1.0, "response_format": "mp3"|"opus"|"aac"|"flac"|"wav"|"pcm", "stream_format": "audio"|"sse"}`)

// SpeechDoor serves POST /v1/audio/speech, OpenAI-compatible: input, voice, speed (0.25–4.0;
// past Kokoro's 0.5–2.0 time-stretched), response_format (mp3, the default as OpenAI's, opus in
// Ogg, aac in ADTS, flac, wav, pcm) and stream_format (audio, or sse: speech.audio.delta events
// then speech.audio.done). model and instructions are accepted and ignored. The body is encoded
// and streamed sentence by sentence as each exists: a WAV body starts with a streaming header
// whose sizes say "unknown" (0xFFFFFFFF). Errors found before the first audio
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
	speed, stretch, err := speechSpeed(req.Speed)
	if err != nil {
		writeSpeechError(w, err, "speed")
		return
	}
	format, sse, err := speechFormat(req.ResponseFormat, req.StreamFormat)
	if err != nil {
		param := "response_format"
		if errors.Is(err, ErrUnsupportedStreamFormat) {
			param = "stream_format"
		}
		writeSpeechError(w, err, param)
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
	// whole response, which a long text's audio could not meet). The encoder (audio/codec)
	// writes the body; nothing else does while it lives.
	// The encoder is made before the first sentence is spoken (AAC's ffmpeg starts meanwhile); it
	// writes nothing before its first Write, which follows the headers.
	body := &speechBody{w: w, rc: http.NewResponseController(w), sse: sse}
	enc, err := codec.NewEncoder(format, kokoro.SampleRate, body)
	if err != nil {
		d.svc.log.Error("speech: start the encoder", "format", format, "err", err)
		writeSpeechError(w, ErrSynthesisFailed, "response_format")
		return
	}
	defer enc.Abort() // after Close, a no-op; after a failure, frees the encoder (AAC: ends ffmpeg)
	started := false
	pieceStart := time.Now()
	err = engine.Speak(r.Context(), kokoro.Request{Text: *req.Input, Voice: voice, Speed: speed}, func(c kokoro.Chunk) error {
		d.svc.speech.ObserveSynthesis(time.Since(pieceStart))
		if !started {
			started = true
			beginSpeechBody(w, format, sse, stretch)
		}
		pcm := stretched(c.PCM, stretch)
		if err := enc.Write(pcm); err != nil {
			return err
		}
		d.svc.tab(r).spoken(float64(len(pcm)) / kokoro.SampleRate)
		pieceStart = time.Now()
		return nil
	})
	if err == nil && started {
		if err = enc.Close(); err == nil {
			err = body.done()
		}
	}
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
