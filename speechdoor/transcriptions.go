package speechdoor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"

	"github.com/voiced/voiced/audio"
	"github.com/voiced/voiced/door"
	"github.com/voiced/voiced/speechcore"
	"github.com/voiced/voiced/speechcore/whisper"
)

// MaxUploadBytes bounds a POST /v1/audio/transcriptions body (OpenAI's own limit is 25 MB).
const MaxUploadBytes = 64 << 20

// Refusals of POST /v1/audio/transcriptions, by name (shown in OpenAI's error shape).
var (
	ErrMissingFile = door.NewRefusal(http.StatusBadRequest, "missing_file",
		"send the audio as the multipart/form-data field 'file' (flac, mp3, mp4/m4a, ogg, wav, webm; or raw PCM16LE mono 16 kHz as audio/pcm)")
	ErrEmptyUpload = door.NewRefusal(http.StatusBadRequest, "empty_upload",
		"the uploaded file holds no audio")
	ErrBrokenWAV = door.NewRefusal(http.StatusBadRequest, "invalid_wav",
		"the WAV file's header is broken or its data is truncated")
	ErrUnsupportedEncoding = door.NewRefusal(http.StatusBadRequest, "unsupported_encoding",
		"the WAV file's encoding is not supported: send 8/16/24/32-bit PCM or 32-bit float WAV, or raw PCM16LE mono 16 kHz")
	ErrUnsupportedRate = door.NewRefusal(http.StatusBadRequest, "unsupported_sample_rate",
		"the WAV file's sample rate is not supported")
	ErrResponseFormat = door.NewRefusal(http.StatusBadRequest, "unsupported_response_format",
		"response_format must be json, text, verbose_json, srt or vtt")
	ErrUploadTooLarge = door.NewRefusal(http.StatusRequestEntityTooLarge, "upload_too_large",
		fmt.Sprintf("the upload is over %d MiB", MaxUploadBytes>>20))
	ErrBadForm = door.NewRefusal(http.StatusBadRequest, "invalid_form",
		"the body must be multipart/form-data with a 'file' field")
)

// TranscriptionsDoor serves POST /v1/audio/transcriptions, OpenAI-compatible. The multipart
// field 'file' is recognised by its bytes (never its name): WAV of any common rate and channel
// count (mixed to mono, resampled to 16 kHz), FLAC, MP3, MP4/M4A, Ogg (Opus, Vorbis), WebM, ADTS
// AAC (uploadformat.go, audio/codec); or raw PCM16LE mono 16 kHz when the part's Content-Type
// says audio/pcm. Anything else is refused by name (unsupported_audio_format). 'model' is accepted and
// ignored; 'response_format' is json (default), text, verbose_json, srt or vtt (one cue per window). Audio over 30 s is
// decoded in 30 s windows, joined with a space.
type TranscriptionsDoor struct {
	svc *Doors
	// translate makes it POST /v1/audio/translations: Whisper's <|translate|> task, English
	// text whatever the language spoken (detected unless the form names it).
	translate bool
}

// NewTranscriptionsDoor returns the door reading its engine from svc.
func NewTranscriptionsDoor(svc *Doors) *TranscriptionsDoor { return &TranscriptionsDoor{svc: svc} }

// NewTranslationsDoor is POST /v1/audio/translations (OpenAI's route: file, model, prompt,
// response_format, temperature): the same upload and outputs, decoded with <|translate|>.
func NewTranslationsDoor(svc *Doors) *TranscriptionsDoor {
	return &TranscriptionsDoor{svc: svc, translate: true}
}

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
	Logprobs []logprobJSON    `json:"logprobs,omitempty"`
}

func (d *TranscriptionsDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	engine := d.svc.speech.Whisper
	if engine == nil {
		writeOpenAIError(w, speechcore.ErrNotWarm)
		return
	}
	// A speech session like any other: an upload is read, spooled and decoded only within the cap.
	release, err := d.svc.Gate.Acquire("")
	if err != nil {
		d.svc.countRefusal(err)
		writeOpenAIError(w, err)
		return
	}
	defer release()
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes)
	up, refusal := readUpload(r)
	if refusal != nil {
		writeOpenAIError(w, refusal)
		return
	}
	defer up.close()
	switch up.format {
	case "json", "text", "verbose_json", "srt", "vtt":
	default:
		writeOpenAIError(w, door.Refuse(ErrResponseFormat, fmt.Sprintf("response_format %q: use json, text, verbose_json, srt or vtt", clip(up.format))))
		return
	}
	if d.translate {
		if err := engine.CheckTranslate(); err != nil {
			writeOpenAIError(w, door.Refuse(ErrTranslateNotServed, err.Error()))
			return
		}
		if up.language == "" {
			up.language = whisper.LanguageAuto // the spoken language is detected, as OpenAI's route does
		}
	}
	hearing, refusal := up.hearing(engine)
	if refusal != nil {
		writeOpenAIError(w, refusal)
		return
	}
	hearing.translate = d.translate
	src, closeSrc, refusal := openAnyUpload(up)
	if refusal != nil {
		writeOpenAIError(w, refusal)
		return
	}
	defer closeSrc()
	label := "transcriptions"
	if d.translate {
		label = "translations"
	}
	defer d.svc.opened(label)()
	defer d.svc.holdUsage()() // the meter's close waits for this door's last seconds
	var segments []verboseSegment
	var texts []string
	var heardIn string // the language of the first window with text (detected with auto)
	var logprobs []logprobJSON
	start := 0
	for {
		window, err := src.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			d.svc.log.Warn("transcriptions: read the upload", "err", err)
			writeOpenAIError(w, door.Refuse(ErrBadForm, "reading the upload failed"))
			return
		}
		res, err := engine.TranscribeAs(r.Context(), window, hearing.request(true, ""))
		if err == nil {
			d.svc.speech.ObserveTranscription(res)
		}
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			logDecodeFailure(d.svc.log, "transcriptions: decode", err)
			writeOpenAIError(w, transcriptionError(err))
			return
		}
		d.svc.tab(r).heard(seconds(len(window))) // each window once it is decoded
		text := strings.TrimSpace(res.Text)
		if text != "" {
			texts = append(texts, text)
			if heardIn == "" {
				heardIn = res.Language
			}
		}
		logprobs = append(logprobs, logprobsJSON(res.Logprobs)...)
		segments = append(segments, windowSegments(res, len(segments), start, len(window))...)
		start += len(window)
	}
	text := strings.Join(texts, " ")
	switch up.format {
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, text+"\n")
	case "srt", "vtt":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, subtitles(up.format, segments))
	case "verbose_json":
		language := spokenLanguage(heardIn, hearing, engine)
		if d.translate {
			language = whisper.LanguageName("en") // the output's language, as OpenAI's TranslationVerbose says: always english
		}
		writeJSON(w, http.StatusOK, verboseTranscription{
			Task: task(d.translate), Language: language, Duration: seconds(start), Text: text,
			Segments: orEmptySegments(segments), Logprobs: logprobsOrNil(hearing, logprobs),
		})
	default:
		writeJSON(w, http.StatusOK, struct {
			Text     string        `json:"text"`
			Logprobs []logprobJSON `json:"logprobs,omitempty"`
		}{text, logprobsOrNil(hearing, logprobs)})
	}
}

// Bounds of the multipart form, read as it arrives (not with ParseMultipartForm, which keeps up
// to 10 MB of other fields in memory besides the file).
const (
	// maxFormParts: OpenAI's form has file, model, language, prompt, response_format,
	// temperature, timestamp_granularities[] and a few more; 32 is room for all of them.
	maxFormParts = 32
	// maxFormValue bounds one field other than file (a prompt is the longest: OpenAI's is 224
	// tokens, under 2 KiB of text).
	maxFormValue = 4 << 10
	// uploadInMemory: a file up to this size is kept in memory; a larger one is spooled to a
	// temporary file, so memory per upload does not grow with MaxUploadBytes.
	uploadInMemory = 1 << 20
)

// MaxUploadSeconds bounds the audio one upload may hold, decoded: the door decodes 30 s windows
// one after the other, so this is the decoding one request can ask for (120 windows). 64 MiB of
// PCM16 at Whisper's 16 kHz (MaxUploadBytes) is 35 min, under it; only low-rate or 8-bit files
// reach it: an 8-bit 1 kHz WAV of 64 MiB would be 18.6 hours.
const MaxUploadSeconds = 3600

// ErrAudioTooLong refuses an upload holding more than MaxUploadSeconds of audio.
var ErrAudioTooLong = door.NewRefusal(http.StatusRequestEntityTooLarge, "audio_too_long",
	fmt.Sprintf("an upload may hold at most %d s of audio; split it", MaxUploadSeconds))

// upload is the form as read: the file (in memory or spooled to disk) and response_format.
type upload struct {
	file        uploadFile
	size        int64
	contentType string // the file part's, which only raw PCM is read by
	format      string
	spool       *os.File // the temporary file, removed by close
	// language, timestamp_granularities[] and include[] as sent (checked by hearing).
	language      string
	granularities []string
	include       []string
}

func (u *upload) close() {
	if u.spool != nil {
		u.spool.Close()
		os.Remove(u.spool.Name())
	}
}

// readUpload reads the multipart form part by part: at most maxFormParts parts, each field other
// than file at most maxFormValue bytes, the file kept in memory up to uploadInMemory and spooled
// past it. The body is already limited to MaxUploadBytes.
func readUpload(r *http.Request) (*upload, *door.Refusal) {
	bodyErr := func(err error) *door.Refusal {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return ErrUploadTooLarge
		}
		return door.Refuse(ErrBadForm, "the body must be multipart/form-data with a 'file' field: "+err.Error())
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, bodyErr(err)
	}
	up := &upload{format: "json"}
	found := false
	for parts := 0; ; parts++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			up.close()
			return nil, bodyErr(err)
		}
		if parts == maxFormParts {
			up.close()
			return nil, door.Refuse(ErrBadForm, fmt.Sprintf("the form may have at most %d parts", maxFormParts))
		}
		name := part.FormName()
		if name == "file" && !found {
			found = true
			up.contentType = part.Header.Get("Content-Type")
			if err := up.take(part); err != nil {
				up.close()
				return nil, bodyErr(err)
			}
			continue
		}
		value, err := io.ReadAll(io.LimitReader(part, maxFormValue+1))
		if err != nil {
			up.close()
			return nil, bodyErr(err)
		}
		if len(value) > maxFormValue {
			up.close()
			return nil, door.Refuse(ErrBadForm, fmt.Sprintf("the form field %q is over %d bytes", clip(name), maxFormValue))
		}
		if name == "response_format" && len(value) > 0 {
			up.format = string(value)
		}
		up.option(name, string(value))
	}
	if !found {
		return nil, ErrMissingFile
	}
	return up, nil
}

// take reads the file part: into memory up to uploadInMemory, the rest spooled to a temporary file.
func (u *upload) take(part io.Reader) error {
	head, err := io.ReadAll(io.LimitReader(part, uploadInMemory+1))
	if err != nil {
		return err
	}
	if len(head) <= uploadInMemory {
		u.file, u.size = bytes.NewReader(head), int64(len(head))
		return nil
	}
	f, err := os.CreateTemp("", "voiced-upload-*")
	if err != nil {
		return fmt.Errorf("spool the upload: %w", err)
	}
	u.spool = f
	n, err := io.Copy(f, io.MultiReader(bytes.NewReader(head), part))
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool the upload: %w", err)
	}
	u.file, u.size = f, n
	return nil
}

// uploadBlockSeconds is how much of the upload is decoded (and resampled) at a time: one second.
const uploadBlockSeconds = 1

// uploadAudio yields an upload's audio as 16 kHz mono windows of at most audio.WhisperSamples,
// decoding and resampling a block at a time: memory is one window and one block, whatever the
// upload's length or rate. The windows are exactly those of the whole signal resampled at once.
type uploadAudio struct {
	block   func() ([]float32, error) // the next block at the source rate; io.EOF at the end
	rs      *audio.Resampler          // nil at 16 kHz
	pending []float32                 // 16 kHz samples not yet handed out
	ended   bool
}

// openUpload reads a WAV's header (by its RIFF magic) or takes raw PCM16LE mono 16 kHz (what
// openAnyUpload hands it: a WAV, or a file declared audio/pcm), and refuses, before decoding a sample, what cannot be transcribed: a broken or empty file, and one
// holding more than MaxUploadSeconds.
func openUpload(r io.Reader, size int64) (*uploadAudio, *door.Refusal) {
	if size == 0 {
		return nil, ErrEmptyUpload
	}
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(4)
	if !bytes.Equal(magic, []byte("RIFF")) {
		if size%2 != 0 {
			return nil, door.Refuse(ErrOddLengthPCM, "a file that is not a WAV is read as raw PCM16LE mono 16 kHz, which needs an even number of bytes")
		}
		if size/2 > MaxUploadSeconds*audio.WhisperSampleRate {
			return nil, tooLong(float64(size/2) / audio.WhisperSampleRate)
		}
		return rawPCMUpload(br), nil
	}
	st, err := audio.OpenWAV(br, size)
	switch {
	case errors.Is(err, audio.ErrWAVEmpty):
		return nil, ErrEmptyUpload
	case errors.Is(err, audio.ErrWAVEncoding):
		return nil, door.Refuse(ErrUnsupportedEncoding, ErrUnsupportedEncoding.Message()+" ("+err.Error()+")")
	case errors.Is(err, audio.ErrRate):
		return nil, door.Refuse(ErrUnsupportedRate, ErrUnsupportedRate.Message()+" ("+err.Error()+")")
	case err != nil:
		return nil, door.Refuse(ErrBrokenWAV, ErrBrokenWAV.Message()+" ("+err.Error()+")")
	}
	if secs := float64(st.Frames()) / float64(st.Rate()); secs > MaxUploadSeconds {
		return nil, tooLong(secs)
	}
	u := &uploadAudio{block: func() ([]float32, error) { return st.Next(uploadBlockSeconds * st.Rate()) }}
	if st.Rate() != audio.WhisperSampleRate {
		u.rs, err = audio.NewResampler(st.Rate(), audio.WhisperSampleRate) // OpenWAV refused rates out of range
		if err != nil {
			return nil, door.Refuse(ErrUnsupportedRate, ErrUnsupportedRate.Message()+" ("+err.Error()+")")
		}
	}
	return u, nil
}

func tooLong(secs float64) *door.Refusal {
	return door.Refuse(ErrAudioTooLong, fmt.Sprintf("the upload holds %.0f s of audio; at most %d s is taken: split it", secs, MaxUploadSeconds))
}

// next returns the next window (at most audio.WhisperSamples at 16 kHz); io.EOF after the last.
func (u *uploadAudio) next() ([]float32, error) {
	for len(u.pending) < audio.WhisperSamples && !u.ended {
		block, err := u.block()
		if errors.Is(err, io.EOF) {
			u.ended = true
			if u.rs != nil {
				u.pending = append(u.pending, u.rs.Flush()...)
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if u.rs != nil {
			block = u.rs.Process(block)
		}
		u.pending = append(u.pending, block...)
	}
	n := min(len(u.pending), audio.WhisperSamples)
	if n == 0 {
		return nil, io.EOF
	}
	window := append([]float32(nil), u.pending[:n]...)
	u.pending = u.pending[:copy(u.pending, u.pending[n:])]
	return window, nil
}

// writeOpenAIError writes err in OpenAI's shape; a missing or empty upload names the file field.
func writeOpenAIError(w http.ResponseWriter, err error) {
	param := ""
	if errors.Is(err, ErrMissingFile) || errors.Is(err, ErrEmptyUpload) {
		param = "file"
	}
	door.WriteOpenAIError(w, err, param)
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
