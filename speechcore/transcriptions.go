package speechcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore/audio"
)

// MaxUploadBytes bounds a POST /v1/audio/transcriptions body (OpenAI's own limit is 25 MB).
const MaxUploadBytes = 64 << 20

// Refusals of POST /v1/audio/transcriptions, by name (shown in OpenAI's error shape).
var (
	ErrMissingFile = &door.Refusal{Status: http.StatusBadRequest, Name: "missing_file",
		Message: "send the audio as the multipart/form-data field 'file' (WAV, or raw PCM16LE mono 16 kHz)"}
	ErrEmptyUpload = &door.Refusal{Status: http.StatusBadRequest, Name: "empty_upload",
		Message: "the uploaded file holds no audio"}
	ErrBrokenWAV = &door.Refusal{Status: http.StatusBadRequest, Name: "invalid_wav",
		Message: "the WAV file's header is broken or its data is truncated"}
	ErrUnsupportedEncoding = &door.Refusal{Status: http.StatusBadRequest, Name: "unsupported_encoding",
		Message: "the WAV file's encoding is not supported: send 8/16/24/32-bit PCM or 32-bit float WAV, or raw PCM16LE mono 16 kHz"}
	ErrUnsupportedRate = &door.Refusal{Status: http.StatusBadRequest, Name: "unsupported_sample_rate",
		Message: "the WAV file's sample rate is not supported"}
	ErrResponseFormat = &door.Refusal{Status: http.StatusBadRequest, Name: "unsupported_response_format",
		Message: "response_format must be json, text, verbose_json, srt or vtt"}
	ErrUploadTooLarge = &door.Refusal{Status: http.StatusRequestEntityTooLarge, Name: "upload_too_large",
		Message: fmt.Sprintf("the upload is over %d MiB", MaxUploadBytes>>20)}
	ErrBadForm = &door.Refusal{Status: http.StatusBadRequest, Name: "invalid_form",
		Message: "the body must be multipart/form-data with a 'file' field"}
)

// TranscriptionsDoor serves POST /v1/audio/transcriptions, OpenAI-compatible. The multipart
// field 'file' is a WAV of any common rate and channel count (mixed to mono, resampled to
// 16 kHz) or, when it does not start with RIFF, raw PCM16LE mono 16 kHz. 'model' is accepted and
// ignored; 'response_format' is json (default), text, verbose_json, srt or vtt (one cue per window). Audio over 30 s is
// decoded in 30 s windows, joined with a space.
type TranscriptionsDoor struct {
	svc *Service
}

// NewTranscriptionsDoor returns the door reading its engine from svc.
func NewTranscriptionsDoor(svc *Service) *TranscriptionsDoor { return &TranscriptionsDoor{svc: svc} }

type verboseSegment struct {
	ID               int     `json:"id"`
	Seek             int     `json:"seek"`
	Start            float64 `json:"start"`
	End              float64 `json:"end"`
	Text             string  `json:"text"`
	Tokens           []int   `json:"tokens"`
	Temperature      float64 `json:"temperature"`
	AvgLogprob       float64 `json:"avg_logprob"`
	CompressionRatio float64 `json:"compression_ratio"`
	NoSpeechProb     float64 `json:"no_speech_prob"`
}

type verboseTranscription struct {
	Task     string           `json:"task"`
	Language string           `json:"language"`
	Duration float64          `json:"duration"`
	Text     string           `json:"text"`
	Segments []verboseSegment `json:"segments"`
}

func (d *TranscriptionsDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	engine := d.svc.Whisper
	if engine == nil {
		writeOpenAIError(w, ErrNotWarm)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes)
	format := "json"
	pcm, refusal := readUpload(r, &format)
	if refusal != nil {
		writeOpenAIError(w, refusal)
		return
	}
	switch format {
	case "json", "text", "verbose_json", "srt", "vtt":
	default:
		writeOpenAIError(w, door.Refuse(ErrResponseFormat, fmt.Sprintf("response_format %q: use json, text, verbose_json, srt or vtt", format)))
		return
	}
	defer d.svc.opened("transcriptions")()
	defer d.svc.holdUsage()() // the meter's close waits for this door's last seconds
	var segments []verboseSegment
	var texts []string
	for start := 0; start < len(pcm); start += audio.WhisperSamples {
		window := pcm[start:min(start+audio.WhisperSamples, len(pcm))]
		res, err := engine.Transcribe(r.Context(), window)
		if err == nil {
			d.svc.ObserveTranscription(res)
		}
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			d.svc.log.Error("transcriptions: decode", "err", err)
			writeOpenAIError(w, transcriptionError(err))
			return
		}
		d.svc.heard(seconds(len(window))) // each window once it is decoded
		text := strings.TrimSpace(res.Text)
		if text != "" {
			texts = append(texts, text)
		}
		segments = append(segments, verboseSegment{
			ID: len(segments), Seek: start / audio.WhisperHop,
			Start: seconds(start), End: seconds(start + len(window)),
			Text: " " + text, Tokens: orEmpty(res.Tokens),
		})
	}
	text := strings.Join(texts, " ")
	switch format {
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, text+"\n")
	case "srt", "vtt":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, subtitles(format, segments))
	case "verbose_json":
		writeJSON(w, http.StatusOK, verboseTranscription{
			Task: "transcribe", Language: "english", Duration: seconds(len(pcm)), Text: text, Segments: orEmptySegments(segments),
		})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"text": text})
	}
}

// readUpload parses the form and returns the audio as 16 kHz mono float32.
func readUpload(r *http.Request, format *string) ([]float32, *door.Refusal) {
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, ErrUploadTooLarge
		}
		return nil, door.Refuse(ErrBadForm, "the body must be multipart/form-data with a 'file' field: "+err.Error())
	}
	defer r.MultipartForm.RemoveAll()
	if f := r.FormValue("response_format"); f != "" {
		*format = f
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		return nil, ErrMissingFile
	}
	defer file.Close()
	data, err := io.ReadAll(file)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, ErrUploadTooLarge
		}
		return nil, door.Refuse(ErrBadForm, "reading the upload failed: "+err.Error())
	}
	return decodeUpload(data)
}

// decodeUpload reads a WAV (by its RIFF magic) or raw PCM16LE mono 16 kHz.
func decodeUpload(data []byte) ([]float32, *door.Refusal) {
	if len(data) == 0 {
		return nil, ErrEmptyUpload
	}
	if !bytes.HasPrefix(data, []byte("RIFF")) {
		pcm, err := audio.PCM16ToFloat32(data)
		if err != nil {
			return nil, door.Refuse(ErrOddLengthPCM, "a file that is not a WAV is read as raw PCM16LE mono 16 kHz, which needs an even number of bytes")
		}
		return pcm, nil
	}
	pcm, rate, err := audio.DecodeWAVBytes(data)
	switch {
	case errors.Is(err, audio.ErrWAVEmpty):
		return nil, ErrEmptyUpload
	case errors.Is(err, audio.ErrWAVEncoding):
		return nil, door.Refuse(ErrUnsupportedEncoding, ErrUnsupportedEncoding.Message+" ("+err.Error()+")")
	case errors.Is(err, audio.ErrRate):
		return nil, door.Refuse(ErrUnsupportedRate, ErrUnsupportedRate.Message+" ("+err.Error()+")")
	case err != nil:
		return nil, door.Refuse(ErrBrokenWAV, ErrBrokenWAV.Message+" ("+err.Error()+")")
	}
	if len(pcm) == 0 {
		return nil, ErrEmptyUpload
	}
	if rate != audio.WhisperSampleRate {
		pcm = audio.Resample(pcm, rate, audio.WhisperSampleRate) // DecodeWAV refused rates out of range
	}
	return pcm, nil
}

// openAIError is OpenAI's error body; code carries the refusal's name.
type openAIError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func writeOpenAIError(w http.ResponseWriter, err error) {
	var body openAIError
	status := http.StatusInternalServerError
	var r *door.Refusal
	if errors.As(err, &r) {
		status = r.Status
		body.Error.Message, body.Error.Code = r.Message, r.Name
		if r.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(r.RetryAfter.Seconds()))))
		}
	} else {
		body.Error.Message, body.Error.Code = "the server failed this request; see its log", "internal_error"
	}
	body.Error.Type = "invalid_request_error"
	if status >= 500 {
		body.Error.Type = "server_error"
	}
	if r != nil && (r.Name == ErrMissingFile.Name || r.Name == ErrEmptyUpload.Name) {
		p := "file"
		body.Error.Param = &p
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// subtitles writes one cue per decoded window with text (SubRip or WebVTT).
func subtitles(format string, segments []verboseSegment) string {
	var b strings.Builder
	sep := ","
	if format == "vtt" {
		b.WriteString("WEBVTT\n\n")
		sep = "."
	}
	stamp := func(sec float64) string {
		ms := int64(math.Round(sec * 1000))
		return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
	}
	cue := 0
	for _, seg := range segments {
		text := strings.TrimSpace(seg.Text)
		if text == "" {
			continue
		}
		cue++
		if format == "srt" {
			fmt.Fprintf(&b, "%d\n", cue)
		}
		fmt.Fprintf(&b, "%s --> %s\n%s\n\n", stamp(seg.Start), stamp(seg.End), text)
	}
	return b.String()
}

func seconds(samples int) float64 { return float64(samples) / audio.WhisperSampleRate }

func orEmpty(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

func orEmptySegments(s []verboseSegment) []verboseSegment {
	if s == nil {
		return []verboseSegment{}
	}
	return s
}
